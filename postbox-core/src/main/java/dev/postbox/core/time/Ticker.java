package dev.postbox.core.time;

import java.time.Duration;

/**
 * A monotonic time source in nanoseconds, for measuring durations and deadlines (never wall-clock
 * time: use {@link java.time.Clock} for that). Injected wherever Postbox measures or waits so that
 * tests can run on {@link FakeTime} instead of the system's clock.
 *
 * <p>Implementations must be thread-safe. Only differences between two readings are meaningful.
 */
@FunctionalInterface
public interface Ticker {

  /** The JVM's monotonic clock, {@link System#nanoTime()}. */
  Ticker SYSTEM = System::nanoTime;

  /** The current reading, in nanoseconds from an arbitrary origin. */
  long nanos();

  /** The time passed since {@code startNanos}, an earlier reading of this ticker. */
  default Duration elapsedSince(long startNanos) {
    return Duration.ofNanos(nanos() - startNanos);
  }

  /** A reading {@code duration} from now, for deadlines compared with {@link #reached(long)}. */
  default long deadlineIn(Duration duration) {
    return nanos() + duration.toNanos();
  }

  /** Whether a deadline made by {@link #deadlineIn(Duration)} has passed (overflow-safe). */
  default boolean reached(long deadlineNanos) {
    return nanos() - deadlineNanos >= 0;
  }
}
