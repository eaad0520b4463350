package dev.postbox.core;

import java.time.Duration;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Exponential backoff with full jitter bounds: attempt {@code n} (1-based) waits a random duration
 * between {@code (1 - jitter) * d} and {@code d}, where {@code d = min(max, initial *
 * multiplier^(n-1))}.
 *
 * <p>Defaults ({@link #DEFAULT}): initial 100 ms, max 10 s, multiplier 2, jitter 0.5. Immutable and
 * thread-safe.
 *
 * @param initial delay before the first retry
 * @param max upper bound for any delay
 * @param multiplier growth factor per attempt, at least 1
 * @param jitter fraction of the delay that is randomised, 0 (none) to 1 (full jitter)
 */
public record Backoff(Duration initial, Duration max, double multiplier, double jitter) {

  /** 100 ms doubling up to 10 s, 50 % jitter. */
  public static final Backoff DEFAULT =
      new Backoff(Duration.ofMillis(100), Duration.ofSeconds(10), 2, 0.5);

  public Backoff {
    Objects.requireNonNull(initial, "initial");
    Objects.requireNonNull(max, "max");
    if (initial.isNegative() || initial.isZero()) {
      throw new IllegalArgumentException("initial must be positive, was " + initial);
    }
    if (max.compareTo(initial) < 0) {
      throw new IllegalArgumentException("max (" + max + ") must be >= initial (" + initial + ")");
    }
    if (!(multiplier >= 1)) {
      throw new IllegalArgumentException("multiplier must be >= 1, was " + multiplier);
    }
    if (!(jitter >= 0 && jitter <= 1)) {
      throw new IllegalArgumentException("jitter must be in [0, 1], was " + jitter);
    }
  }

  /** The delay before retry number {@code attempt} (1-based). */
  public Duration delay(int attempt, RandomGenerator random) {
    if (attempt < 1) {
      throw new IllegalArgumentException("attempt must be >= 1, was " + attempt);
    }
    double nanos = initial.toNanos() * Math.pow(multiplier, Math.min(attempt - 1, 62));
    double capped = Math.min(nanos, max.toNanos());
    double low = capped * (1 - jitter);
    return Duration.ofNanos((long) (low + random.nextDouble() * (capped - low)));
  }
}
