package dev.postbox.core.consumer;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * A token bucket of retries: {@code perSecond} tokens a second, at most {@code perSecond} saved up.
 * A retry that finds no token reserves the next one and is told how long until it is free, so
 * retries are spaced out rather than refused. Thread-safe.
 */
final class RetryBudget {

  private final double perSecond;
  private final Clock clock;
  private double tokens;
  private Instant last;

  RetryBudget(int perSecond, Clock clock) {
    this.perSecond = perSecond;
    this.clock = clock;
    this.tokens = perSecond;
  }

  /** Takes (or reserves) a token; returns how long until it is free (zero if it is now). */
  synchronized Duration reserve() {
    Instant now = clock.instant();
    if (last != null && now.isAfter(last)) {
      double elapsedNanos = Duration.between(last, now).toNanos();
      tokens = Math.min(perSecond, tokens + elapsedNanos * perSecond / 1e9);
    }
    if (last == null || now.isAfter(last)) {
      last = now;
    }
    tokens -= 1;
    if (tokens >= 0) {
      return Duration.ZERO;
    }
    return Duration.ofNanos((long) Math.ceil(-tokens * 1e9 / perSecond));
  }
}
