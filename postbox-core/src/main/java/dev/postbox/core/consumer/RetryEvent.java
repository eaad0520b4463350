package dev.postbox.core.consumer;

import java.time.Duration;
import java.util.Objects;

/**
 * A retry decided by a {@link FailureHandlers} handler, as passed to its {@code onRetry} listener
 * (on the handler's thread, before the wait). The delivery is valid only during the listener call.
 *
 * @param delivery the failed delivery
 * @param error what it failed with
 * @param countedAttempts failed attempts counted towards {@link RetryPolicy#maxAttempts()} so far
 *     (open-circuit failures are not counted)
 * @param delay the wait before the next attempt
 * @param cause what the wait is for
 */
public record RetryEvent(
    Delivery delivery, Throwable error, int countedAttempts, Duration delay, Cause cause) {

  /** What a retry's wait is for. */
  public enum Cause {
    /** The retry policy's backoff after a transient failure. */
    BACKOFF,
    /**
     * The subscription's retry budget was spent; the wait (longer than the backoff) lasts until a
     * retry is free again.
     */
    RETRY_BUDGET,
    /**
     * A dependency's circuit breaker is open ({@link DependencyUnavailableException}); the wait
     * lasts until it lets a probe through, and the attempt is not counted.
     */
    DEPENDENCY_UNAVAILABLE
  }

  public RetryEvent {
    Objects.requireNonNull(delivery, "delivery");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(delay, "delay");
    Objects.requireNonNull(cause, "cause");
  }
}
