package dev.postbox.core.consumer;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The settings every subscriber has whatever its transport, declared once: the Kafka, Kafka share
 * group and RabbitMQ subscribers' builders extend it (through {@link OrderedSubscriberBuilder}
 * where they keep per-key order) and add their own, as Failsafe's policy builders share theirs.
 * Each setter checks its value at once and names the option; the transport's {@code build()} checks
 * the settings against each other and the subscription.
 *
 * @param <B> the transport's builder, returned by every setter for chaining
 */
public abstract class SubscriberBuilder<B extends SubscriberBuilder<B>> {

  /** Default interval of the inbox purge. */
  public static final Duration DEFAULT_INBOX_PURGE_INTERVAL = Duration.ofMinutes(10);

  /**
   * The shared settings as set, for the transport's {@code build()}.
   *
   * @param handler the handler of one message at a time
   * @param inbox the inbox ({@code EFFECTIVELY_ONCE})
   * @param inboxPurgeInterval how often expired dedupe records are purged
   * @param idempotencyStore the idempotency store ({@code DEDUPLICATED})
   * @param onDuplicate what receives the {@code DEDUPLICATED} duplicates and their stored results
   * @param deadLetters where given-up messages are kept
   * @param metrics where the subscriber reports
   * @param openTelemetry the OpenTelemetry of the processing spans (empty: the global one)
   * @param clock the clock of failure times
   * @param ticker the monotonic time of the subscriber's loops
   * @param sleeper the sleeping of the subscriber's loops
   */
  public record Common(
      Optional<MessageHandler> handler,
      Optional<InboxStore> inbox,
      Duration inboxPurgeInterval,
      Optional<IdempotencyStore> idempotencyStore,
      DuplicateListener onDuplicate,
      Optional<DeadLetterStore> deadLetters,
      PostboxMetrics metrics,
      Optional<OpenTelemetry> openTelemetry,
      Clock clock,
      Ticker ticker,
      Sleeper sleeper) {}

  private MessageHandler handler;
  private InboxStore inbox;
  private Duration inboxPurgeInterval = DEFAULT_INBOX_PURGE_INTERVAL;
  private IdempotencyStore idempotencyStore;
  private DuplicateListener onDuplicate = DuplicateListener.ignore();
  private DeadLetterStore deadLetters;
  private PostboxMetrics metrics = PostboxMetrics.noop();
  private OpenTelemetry openTelemetry;
  private Clock clock = Clock.systemUTC();
  private Ticker ticker = Ticker.SYSTEM;
  private Sleeper sleeper = Sleeper.SYSTEM;

  /** For the transports' builders. */
  protected SubscriberBuilder() {}

  /** This builder, typed as the transport's. */
  @SuppressWarnings("unchecked")
  protected final B self() {
    return (B) this;
  }

  /** Sets the handler for one message at a time. */
  public B handler(MessageHandler handler) {
    this.handler = Objects.requireNonNull(handler, "handler");
    return self();
  }

  /** Sets the inbox (required for {@code EFFECTIVELY_ONCE}). */
  public B inbox(InboxStore inbox) {
    this.inbox = Objects.requireNonNull(inbox, "inbox");
    return self();
  }

  /** Sets how often dedupe records older than the inbox retention are purged (default 10 min). */
  public B inboxPurgeInterval(Duration interval) {
    Objects.requireNonNull(interval, "interval");
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("inboxPurgeInterval must be positive: " + interval);
    }
    this.inboxPurgeInterval = interval;
    return self();
  }

  /**
   * Sets the idempotency store (required for {@code DEDUPLICATED}, refused for the other
   * guarantees; for example {@code RedisIdempotencyStore}): each message id is claimed with the
   * subscription's lease before the handler runs and completed with the handler's {@linkplain
   * Delivery#recordResult recorded result} and the subscription's TTL after it; a failing handler
   * releases the lease so its retry can claim it, and a redelivery while the lease is held waits
   * for it (never runs the handler in parallel).
   */
  public B idempotencyStore(IdempotencyStore store) {
    this.idempotencyStore = Objects.requireNonNull(store, "store");
    return self();
  }

  /**
   * Receives the {@code DEDUPLICATED} duplicates with their stored results (default: ignored, still
   * counted as duplicates suppressed).
   */
  public B onDuplicate(DuplicateListener listener) {
    this.onDuplicate = Objects.requireNonNull(listener, "listener");
    return self();
  }

  /**
   * Keeps every given-up message (permanent failures at their first attempt, others when their
   * retries run out) in {@code store}, byte-identical, before it is acknowledged to the broker
   * (default: none; given-up messages are only logged).
   */
  public B deadLetters(DeadLetterStore store) {
    this.deadLetters = Objects.requireNonNull(store, "store");
    return self();
  }

  /**
   * Sets where the subscriber reports its metrics (default: {@link PostboxMetrics#noop()}): {@code
   * postbox.consumer.*} per group, topic and partition or shard (processed, failed, retried,
   * dead-lettered, duplicates suppressed, stale skipped, unknown types, parked, the age of the
   * oldest unprocessed message) and per topic the handler and end-to-end time.
   */
  public B metrics(PostboxMetrics metrics) {
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    return self();
  }

  /**
   * Sets the OpenTelemetry that makes the processing spans (default: {@code
   * GlobalOpenTelemetry.get()}, a no-op until an SDK is installed). Each processing attempt is one
   * CONSUMER span, a child of the trace context the message carries, current while the handler runs
   * (so messages the handler writes to the outbox continue the trace).
   */
  public B openTelemetry(OpenTelemetry openTelemetry) {
    this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
    return self();
  }

  /** Sets the clock for failure times (default: system UTC). */
  public B clock(Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
    return self();
  }

  /** Sets the monotonic time and the sleeping of the loops, for the transports' test hooks. */
  protected final B useTime(Ticker ticker, Sleeper sleeper) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
    return self();
  }

  /**
   * Refuses, naming the option, an {@link #idempotencyStore} that does not fit {@code
   * subscription}'s guarantee: {@code DEDUPLICATED} needs one, the other guarantees take none. For
   * the transports' {@code build()}.
   *
   * @throws IllegalArgumentException if it does not fit
   */
  protected final void checkIdempotencyStore(Subscription subscription) {
    String name = "subscription '" + subscription.name() + "'";
    DeliveryGuarantee guarantee = subscription.guarantee();
    if (guarantee == DeliveryGuarantee.DEDUPLICATED && idempotencyStore == null) {
      throw new IllegalArgumentException(name + " is DEDUPLICATED and needs an idempotencyStore");
    }
    if (guarantee != DeliveryGuarantee.DEDUPLICATED && idempotencyStore != null) {
      throw new IllegalArgumentException(
          name + " has an idempotencyStore but is " + guarantee + "; use DEDUPLICATED");
    }
  }

  /** The shared settings as set. */
  protected final Common common() {
    return new Common(
        Optional.ofNullable(handler),
        Optional.ofNullable(inbox),
        inboxPurgeInterval,
        Optional.ofNullable(idempotencyStore),
        onDuplicate,
        Optional.ofNullable(deadLetters),
        metrics,
        Optional.ofNullable(openTelemetry),
        clock,
        ticker,
        sleeper);
  }
}
