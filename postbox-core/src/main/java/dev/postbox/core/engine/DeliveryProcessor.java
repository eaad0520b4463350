package dev.postbox.core.engine;

import dev.postbox.core.DecodingException;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.DuplicateListener;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer engine's entry point: what happens to one record (or one batch) after a transport
 * adapter read it, whatever the transport. It coordinates {@link Admission} (decode, unknown types,
 * tenants), {@link OrderedParking}, the {@link RetryLoop} around the {@link InboxApplier}, the
 * {@link DeadLetterWriter} and the {@link ParkingDrainer}; {@link DeliveryTelemetry} counts and
 * traces. The adapter's side of the contract is described on {@link TransportBinding}.
 *
 * <p>Thread-safe.
 */
public final class DeliveryProcessor {

  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  /**
   * A record as read: its position and a way to decode it (which may throw {@link
   * DecodingException}).
   */
  public record Incoming(
      String topic,
      int partition,
      long offset,
      Supplier<Message> decode,
      byte[] key,
      byte[] value,
      List<DeadLetterStore.Header> headers) {}

  /**
   * {@code DEDUPLICATED} settings: the store, who hears of suppressed duplicates, and how waiting
   * for another holder's lease sleeps.
   */
  public record Idempotency(
      IdempotencyStore store, DuplicateListener onDuplicate, Sleeper sleeper) {}

  /**
   * Ordered parking settings: the store, the delay tiers of the delayed retries (the head is
   * retried after tier 1, then tier 2...; after the last it is dead-lettered), whether the rest of
   * the key then waits ({@code block}) or continues, and how a stored record becomes an {@link
   * Incoming} again.
   */
  public record Parking(
      ParkingStore store,
      List<Duration> tiers,
      boolean block,
      Function<ParkingStore.ParkedRecord, Incoming> rehydrate) {}

  /**
   * Takes a message whose in-place retries of a transient failure ran out, for delayed retries
   * outside the processor (for example Kafka retry topics).
   */
  @FunctionalInterface
  public interface RetriesExhausted {
    /**
     * Hands {@code in} off durably; returns {@code true} once it is safe to finish the record
     * (commit its offset), {@code false} if {@code owned} turned false first (it is redelivered).
     */
    boolean handOff(
        Incoming in, Throwable error, int attempts, Instant firstFailure, BooleanSupplier owned);
  }

  private final String group;
  private final MessageHandler handler;
  private final BatchHandler batchHandler;
  private final Clock clock;
  private final DeliveryTelemetry telemetry;
  private final Admission admission;
  private final InboxApplier applier;
  private final OrderedParking parking;
  private final RetryLoop retryLoop;
  private final DeadLetterWriter deadLetters;
  private final Optional<ParkingDrainer> drainer;

  /**
   * A builder of a processor for {@code subscription} read through {@code transport}: {@link
   * Builder#idempotency} is required for a {@code DEDUPLICATED} subscription, {@link Builder#inbox}
   * or {@link Builder#offsets} for {@code EFFECTIVELY_ONCE}; {@link Builder#parking} and {@link
   * Builder#retriesExhausted} are alternatives. The parts are checked against the subscription at
   * {@link Builder#build()}.
   */
  public static Builder builder(TransportBinding transport, Subscription subscription) {
    return new Builder(transport, subscription);
  }

  private DeliveryProcessor(Builder b) {
    TransportBinding transport = b.transport;
    Subscription subscription = b.subscription;
    MessageHandler handler = b.handler;
    BatchHandler batchHandler = b.batchHandler;
    Optional<InboxStore> inbox = b.inbox;
    Optional<OffsetStore> offsets = b.offsets;
    Optional<Idempotency> idempotency = b.idempotency;
    Optional<DeadLetterStore> deadLetters = b.deadLetters;
    Optional<Parking> parking = b.parking;
    Optional<RetriesExhausted> retriesExhausted = b.retriesExhausted;
    Clock clock = b.clock;
    Ticker ticker = b.ticker;
    Sleeper sleeper = b.sleeper;
    PostboxMetrics metrics = b.metrics;
    OpenTelemetry openTelemetry = b.openTelemetry;
    ProcessorChecks.check(
        subscription,
        handler,
        batchHandler,
        inbox,
        offsets,
        idempotency,
        parking,
        retriesExhausted);
    this.group = subscription.name();
    this.handler = handler;
    this.batchHandler = batchHandler;
    this.clock = clock;
    this.telemetry = new DeliveryTelemetry(group, transport, metrics, openTelemetry, clock, ticker);
    FailureHandler failures =
        subscription.failureHandler().withTransientErrors(transport.retriable());
    EngineDelivery.Factory deliveries =
        new EngineDelivery.Factory(subscription, inbox, offsets, telemetry);
    StoreRetry storeRetry = new StoreRetry(sleeper);
    RefusedWrites refused = new RefusedWrites(group, telemetry);
    this.deadLetters =
        new DeadLetterWriter(group, deadLetters, failures, storeRetry, refused, telemetry, clock);
    this.admission =
        new Admission(subscription, failures, deliveries, this.deadLetters, telemetry, clock);
    this.applier =
        new InboxApplier(subscription, inbox, offsets, idempotency, deliveries, telemetry);
    this.parking =
        new OrderedParking(group, parking, storeRetry, this.deadLetters, refused, telemetry, clock);
    this.retryLoop =
        new RetryLoop(
            subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE,
            applier,
            failures,
            deliveries,
            retriesExhausted,
            this.parking,
            this.deadLetters,
            telemetry,
            clock,
            ticker,
            sleeper);
    this.drainer =
        parking.map(pk ->
            new ParkingDrainer(
                group, pk, singleHandler(), applier, this.deadLetters, telemetry, clock));
  }

  /** Counts records read from the broker. */
  public void received(int n) {
    telemetry.received.addAndGet(n);
  }

  /** Counts records dropped unstarted (revoked or closing). */
  public void abandoned(int n) {
    telemetry.abandoned.addAndGet(n);
  }

  /** The counters. */
  public ConsumerStats stats() {
    return telemetry.stats();
  }

  /**
   * Handles one record to the end. Returns {@code true} when it is finished (applied, suppressed,
   * ignored or given up: its offset may be committed), {@code false} when it was abandoned because
   * {@code owned} turned false (it will be redelivered).
   */
  public boolean process(Incoming in, BooleanSupplier owned) {
    Message message = admission.admit(in);
    if (message == null) {
      return true;
    }
    switch (parking.parkBehind(in, message, owned)) {
      case APPENDED -> {
        return true; // its key is parked: it waits there, in order, behind the failing message
      }
      case DEAD_LETTERED -> {
        return true; // the parking store refused it for good: dead-lettered instead
      }
      case NOT_OWNED -> {
        return false; // the store was unreachable until the partition was revoked: redelivered
      }
      case NOT_PARKED -> {
        // the key has no parked sequence: apply it now
      }
    }
    return retryLoop.apply(in, message, singleHandler(), owned);
  }

  /**
   * Handles records of one partition, in offset order, as one batch (one transaction for {@code
   * EFFECTIVELY_ONCE}); if the batch fails, falls back to one record at a time. Returns {@code
   * false} if abandoned part-way.
   */
  public boolean processBatch(List<Incoming> batch, BooleanSupplier owned) {
    Map<Incoming, Message> admitted = new LinkedHashMap<>();
    for (Incoming in : batch) {
      Message m = admission.admit(in);
      if (m != null) {
        admitted.put(in, m);
      }
    }
    if (admitted.isEmpty()) {
      return true;
    }
    if (!owned.getAsBoolean()) {
      return false;
    }
    try {
      applier.applyBatch(admitted, batchHandler, owned);
      return true;
    } catch (OwnershipLost e) {
      return false; // rolled back before its commit: redelivered to the next owner
    } catch (Exception e) {
      log.warn(
          "{}: batch of {} failed ({}); handling its records one at a time",
          group,
          admitted.size(),
          e.toString());
      for (Map.Entry<Incoming, Message> entry : admitted.entrySet()) {
        if (!retryLoop.apply(
            entry.getKey(), entry.getValue(), d -> batchHandler.handle(List.of(d)), owned)) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * One delayed attempt at a record that was handed off: admitted (decoded, validated) and applied
   * like any other, through the inbox for {@code EFFECTIVELY_ONCE}. Returns null when finished
   * (applied, suppressed, ignored or rejected into the dead letters), else the failure.
   */
  public Throwable applyDelayed(Incoming in, int attempt) {
    Message message = admission.admit(in);
    if (message == null) {
      return null;
    }
    // a handed-off record's consumer holds no partition lease that could lapse mid-transaction
    Throwable e = applier.attempt(in, message, singleHandler(), attempt, () -> true);
    if (e != null) { // applied: counted as applied (a retry topic is not parking)
      telemetry.meters(in).failed.increment();
    }
    return e;
  }

  /** Gives up a handed-off record after its last delayed attempt: counted and dead-lettered. */
  public void giveUpDelayed(Incoming in, Throwable error, int attempts, Instant firstFailure) {
    telemetry.givenUp.incrementAndGet();
    Message message = null;
    try {
      message = in.decode().get();
    } catch (RuntimeException ignored) {
      // kept without id and type
    }
    deadLetters.store(
        in,
        message,
        error,
        error instanceof PermanentMessageException
            ? Classification.PERMANENT
            : Classification.RETRIES_EXHAUSTED,
        attempts,
        firstFailure,
        clock.instant());
  }

  /** Counts a delayed retry. */
  public void retried() {
    telemetry.retries.incrementAndGet();
  }

  /** Counts a delayed retry of {@code in} (counted under its topic and partition). */
  public void retried(Incoming in) {
    telemetry.retried(in);
  }

  /**
   * Retries the parked sequences that are due: for each leased key, applies its parked messages in
   * order until one fails (rescheduled for its next tier, or dead-lettered after the last) or the
   * sequence is empty. Returns how many parked messages were applied (0 without parking).
   */
  public int drainParked(BooleanSupplier running) {
    return drainer.map(d -> d.drain(running)).orElse(0);
  }

  /** The handler of one message: the message handler, or the batch handler with a batch of one. */
  private MessageHandler singleHandler() {
    return handler != null ? handler : d -> batchHandler.handle(List.of(d));
  }

  /** A record's position for log lines: {@code topic-partition@offset}. */
  static String position(Incoming in) {
    return in.topic() + "-" + in.partition() + "@" + in.offset();
  }

  /**
   * Builds a {@link DeliveryProcessor}: the transport and the subscription, a handler (or a batch
   * handler for a subscription with a batch size above 1), the stores the guarantee needs, and
   * time, metrics and tracing (defaults: the system UTC clock, {@link Ticker#SYSTEM}, {@link
   * Sleeper#SYSTEM}, {@link PostboxMetrics#noop()}, and {@link GlobalOpenTelemetry}, looked up at
   * the first attempt). {@code clock} is wall time (first failures, due times, end-to-end latency);
   * the ticker and the sleeper measure and wait (handler time, backoff, store retries). Not
   * thread-safe.
   */
  public static final class Builder {
    private final TransportBinding transport;
    private final Subscription subscription;
    private MessageHandler handler;
    private BatchHandler batchHandler;
    private Optional<InboxStore> inbox = Optional.empty();
    private Optional<OffsetStore> offsets = Optional.empty();
    private Optional<Idempotency> idempotency = Optional.empty();
    private Optional<DeadLetterStore> deadLetters = Optional.empty();
    private Optional<Parking> parking = Optional.empty();
    private Optional<RetriesExhausted> retriesExhausted = Optional.empty();
    private Clock clock = Clock.systemUTC();
    private Ticker ticker = Ticker.SYSTEM;
    private Sleeper sleeper = Sleeper.SYSTEM;
    private PostboxMetrics metrics = PostboxMetrics.noop();
    private OpenTelemetry openTelemetry;

    private Builder(TransportBinding transport, Subscription subscription) {
      this.transport = java.util.Objects.requireNonNull(transport, "transport");
      this.subscription = java.util.Objects.requireNonNull(subscription, "subscription");
    }

    /**
     * The handler of one message at a time (null: none; adapters pass what their own builder was
     * given, and {@link #build()} checks that the subscription has the handler it needs).
     */
    public Builder handler(MessageHandler handler) {
      this.handler = handler;
      return this;
    }

    /** The handler of batches (a subscription with a batch size above 1; null: none, as above). */
    public Builder batchHandler(BatchHandler batchHandler) {
      this.batchHandler = batchHandler;
      return this;
    }

    /** The inbox of an {@code EFFECTIVELY_ONCE} subscription (or none). */
    public Builder inbox(Optional<InboxStore> inbox) {
      this.inbox = java.util.Objects.requireNonNull(inbox, "inbox");
      return this;
    }

    /** The stored positions of an {@code EFFECTIVELY_ONCE} subscription instead of an inbox. */
    public Builder offsets(Optional<OffsetStore> offsets) {
      this.offsets = java.util.Objects.requireNonNull(offsets, "offsets");
      return this;
    }

    /** The idempotency store of a {@code DEDUPLICATED} subscription (or none). */
    public Builder idempotency(Optional<Idempotency> idempotency) {
      this.idempotency = java.util.Objects.requireNonNull(idempotency, "idempotency");
      return this;
    }

    /** Where given-up messages are kept (or none). */
    public Builder deadLetters(Optional<DeadLetterStore> deadLetters) {
      this.deadLetters = java.util.Objects.requireNonNull(deadLetters, "deadLetters");
      return this;
    }

    /** Ordered parking of keys whose retries ran out (or none). */
    public Builder parking(Optional<Parking> parking) {
      this.parking = java.util.Objects.requireNonNull(parking, "parking");
      return this;
    }

    /** What takes a message whose in-place retries ran out instead (retry topics; or none). */
    public Builder retriesExhausted(Optional<RetriesExhausted> retriesExhausted) {
      this.retriesExhausted =
          java.util.Objects.requireNonNull(retriesExhausted, "retriesExhausted");
      return this;
    }

    /** Wall time, and how time is measured and waited. */
    public Builder time(Clock clock, Ticker ticker, Sleeper sleeper) {
      this.clock = java.util.Objects.requireNonNull(clock, "clock");
      this.ticker = java.util.Objects.requireNonNull(ticker, "ticker");
      this.sleeper = java.util.Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /** Where the consumer metrics go. */
    public Builder metrics(PostboxMetrics metrics) {
      this.metrics = java.util.Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * What makes one span per processing attempt (null: {@link GlobalOpenTelemetry}, looked up at
     * the first attempt).
     */
    public Builder openTelemetry(OpenTelemetry openTelemetry) {
      this.openTelemetry = openTelemetry;
      return this;
    }

    /**
     * The processor.
     *
     * @throws IllegalArgumentException if the parts do not fit the subscription
     */
    public DeliveryProcessor build() {
      return new DeliveryProcessor(this);
    }
  }
}
