package dev.postbox.core.reply;

import dev.postbox.core.engine.reply.RequestTransport;
import dev.postbox.core.engine.reply.RequesterEngine;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.Objects;

/**
 * The settings every {@link Requester} has whatever its transport, declared once: the Kafka and
 * RabbitMQ requesters' builders extend it and add their own (addresses, names, client properties),
 * as Failsafe's policy builders share theirs. Each setter checks its value at once and names the
 * option; the transport's {@code build()} checks the rest.
 *
 * @param <B> the transport's builder, returned by every setter for chaining
 */
public abstract class RequesterBuilder<B extends RequesterBuilder<B>> {

  /** Default most requests in flight. */
  public static final int DEFAULT_MAX_IN_FLIGHT = 1_000;

  /** Default interval of the timeout checks. */
  public static final Duration DEFAULT_TIMEOUT_CHECK_INTERVAL = Duration.ofMillis(10);

  /** Default number of finished requests remembered (late and duplicate replies). */
  public static final int DEFAULT_REMEMBERED_REQUESTS = 10_000;

  private int maxInFlight = DEFAULT_MAX_IN_FLIGHT;
  private int rememberedRequests = DEFAULT_REMEMBERED_REQUESTS;
  private Duration timeoutCheckInterval = DEFAULT_TIMEOUT_CHECK_INTERVAL;
  private LateReplyListener lateReplies = LateReplyListener.ignore();
  private Ticker ticker = Ticker.SYSTEM;
  private Sleeper sleeper = Sleeper.SYSTEM;

  /** For the transports' builders. */
  protected RequesterBuilder() {}

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /**
   * Sets the most requests in flight; one more is refused with {@link RequesterBusyException}
   * (default 1,000).
   */
  public B maxInFlight(int maxInFlight) {
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be positive: " + maxInFlight);
    }
    this.maxInFlight = maxInFlight;
    return self();
  }

  /**
   * Sets how many finished requests are remembered to tell a late or duplicate reply from an
   * unknown one (default 10,000).
   */
  public B rememberedRequests(int count) {
    if (count < 0) {
      throw new IllegalArgumentException("rememberedRequests must not be negative: " + count);
    }
    this.rememberedRequests = count;
    return self();
  }

  /** Sets how often overdue requests are ended (default 10 ms). */
  public B timeoutCheckInterval(Duration interval) {
    Objects.requireNonNull(interval, "interval");
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("timeoutCheckInterval must be positive: " + interval);
    }
    this.timeoutCheckInterval = interval;
    return self();
  }

  /** Receives replies that came after their request timed out (default: ignored, counted). */
  public B lateReplyListener(LateReplyListener listener) {
    this.lateReplies = Objects.requireNonNull(listener, "listener");
    return self();
  }

  /** Sets the time of the timeouts (default: the system's), for the transports' test hooks. */
  protected final B useTime(Ticker ticker, Sleeper sleeper) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
    return self();
  }

  /**
   * The engine of a requester named {@code name} (in logs and thread names) that sends through
   * {@code transport}, with these settings; futures complete on virtual threads.
   */
  protected final RequesterEngine engine(String name, RequestTransport transport) {
    return new RequesterEngine(
        name,
        transport,
        maxInFlight,
        rememberedRequests,
        timeoutCheckInterval,
        lateReplies,
        ticker,
        sleeper,
        RequesterEngine.VIRTUAL_THREADS);
  }
}
