package dev.postbox.core.consumer;

import dev.postbox.core.Backoff;
import dev.postbox.core.PermanentMessageException;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides what happens when decoding, validation or the handler fails, and receives the messages
 * that are given up. Every failure of a subscription goes through this one interface; the retry,
 * parking and dead-letter machinery plugs in here.
 *
 * <p>Implementations must be thread-safe.
 */
public interface FailureHandler {

  /**
   * Decides, for the failed attempt {@code delivery.attempt()}, whether to retry in place or to
   * give up.
   */
  FailureDecision decide(Delivery delivery, Throwable error);

  /**
   * This handler for a subscription read through a transport whose own errors that match {@code
   * retriable} are transient. The consumer engine calls it once per subscription with the transport
   * adapter's predicate (Kafka's: its {@code RetriableException} and subclasses) and uses the
   * handler it returns. Handlers built by {@link FailureHandlers} answer a copy whose {@link
   * RetryPolicy} classifies such errors as transient, after the permanent rules (see {@link
   * RetryPolicy#classify}), sharing this handler's state; the default returns this handler
   * unchanged.
   */
  default FailureHandler withTransientErrors(java.util.function.Predicate<Throwable> retriable) {
    return this;
  }

  /**
   * Receives a message that is given up. The default logs it at ERROR with its id, type and
   * position.
   */
  default void onGiveUp(Delivery delivery, Throwable error, String reason) {
    Defaults.log.error(
        "giving up on message {} ({}) at {}-{}@{} after {} attempt(s): {}",
        delivery.message().id(),
        delivery.message().type(),
        delivery.topic(),
        delivery.partition(),
        delivery.offset(),
        delivery.attempt(),
        reason,
        error);
  }

  /**
   * Receives a record that could not be decoded into a message (a permanent failure: it is never
   * retried). The exception carries the raw bytes. The default logs it at ERROR.
   */
  default void onUndecodable(
      String topic, int partition, long offset, dev.postbox.core.DecodingException error) {
    Defaults.log.error(
        "giving up on an undecodable record at {}-{}@{}: {}",
        topic,
        partition,
        offset,
        error.getMessage());
  }

  /**
   * Retries transient failures in place up to {@code maxAttempts} attempts in all, waiting {@code
   * backoff} between them; gives up at once on a {@link PermanentMessageException} (undecodable
   * payload, rejected tenant, ...).
   */
  static FailureHandler retrying(int maxAttempts, Backoff backoff) {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
    }
    Objects.requireNonNull(backoff, "backoff");
    return (delivery, error) -> {
      if (error instanceof PermanentMessageException) {
        return new FailureDecision.GiveUp("permanent: " + error, true);
      }
      if (delivery.attempt() >= maxAttempts) {
        return new FailureDecision.GiveUp("failed " + maxAttempts + " attempts: " + error);
      }
      return new FailureDecision.Retry(
          backoff.delay(delivery.attempt(), java.util.concurrent.ThreadLocalRandom.current()));
    };
  }

  /**
   * The default, the same as a {@link Subscription}'s: {@code
   * FailureHandlers.of(RetryPolicy.defaults())} (3 attempts within 1 minute, 100 ms doubling to 5 s
   * with 50 % jitter).
   */
  static FailureHandler defaults() {
    return FailureHandlers.of(RetryPolicy.defaults());
  }

  /** Holder of the default logger. */
  final class Defaults {
    static final Logger log = LoggerFactory.getLogger(FailureHandler.class);

    private Defaults() {}
  }
}
