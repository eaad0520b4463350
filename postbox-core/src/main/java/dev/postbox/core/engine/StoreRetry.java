package dev.postbox.core.engine;

import dev.postbox.core.Backoff;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retries a write to a store (parking, dead letters) with backoff for as long as the record it is
 * for is still owned: a record must never be finished, nor abandoned while its partition stays
 * assigned, because its store was briefly unreachable. A write the store refuses for good (a
 * permanent SQLSTATE, {@link StoreErrors}: text PostgreSQL cannot hold, a row too large for its
 * index) is not retried: {@link StoreRefused} tells the caller, which keeps what it can.
 *
 * <p>Thread-safe.
 */
final class StoreRetry {

  private static final Logger log = LoggerFactory.getLogger(StoreRetry.class);

  /** 100 ms doubling to 5 s, half jittered. */
  static final Backoff BACKOFF = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0.5);

  /** The longest single sleep between two ownership checks. */
  private static final Duration SLICE = Duration.ofMillis(50);

  private final Sleeper sleeper;

  StoreRetry(Sleeper sleeper) {
    this.sleeper = sleeper;
  }

  /**
   * Runs {@code action} until it returns; a {@link RuntimeException} is logged and the action is
   * run again after a backoff. Returns its result, or empty as soon as {@code owned} is false (or
   * the thread is interrupted) after a failure: the caller then abandons the record, which the next
   * owner receives again.
   *
   * @throws StoreRefused if the store refused the write with a permanent SQLSTATE (not retried)
   */
  <T> Optional<T> untilDone(String what, BooleanSupplier owned, Supplier<T> action) {
    for (int attempt = 1; ; attempt++) {
      try {
        return Optional.of(action.get());
      } catch (RuntimeException e) {
        if (StoreErrors.classify(e) == StoreErrors.Kind.PERMANENT) {
          throw new StoreRefused(what, StoreErrors.sqlState(e).orElseThrow(), e);
        }
        log.warn("{} failed (attempt {}); retrying while the record is owned", what, attempt, e);
      }
      if (!sleepWhileOwned(BACKOFF.delay(attempt, ThreadLocalRandom.current()), owned)) {
        log.warn("{}: given up after {} attempts, the record is no longer owned", what, attempt);
        return Optional.empty();
      }
    }
  }

  private boolean sleepWhileOwned(Duration delay, BooleanSupplier owned) {
    Duration left = delay;
    try {
      while (true) {
        if (!owned.getAsBoolean()) {
          return false;
        }
        if (left.isZero() || left.isNegative()) {
          return true;
        }
        Duration slice = left.compareTo(SLICE) < 0 ? left : SLICE;
        sleeper.sleep(slice);
        left = left.minus(slice);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
