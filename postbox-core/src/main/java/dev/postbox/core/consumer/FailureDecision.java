package dev.postbox.core.consumer;

import java.time.Duration;
import java.util.Objects;

/** What to do with a message whose handling failed. */
public sealed interface FailureDecision {

  /** Try again in place after {@code delay} (the partition's key lane waits; other keys go on). */
  record Retry(Duration delay) implements FailureDecision {
    public Retry {
      Objects.requireNonNull(delay, "delay");
      if (delay.isNegative()) {
        throw new IllegalArgumentException("delay must not be negative");
      }
    }
  }

  /**
   * Stop trying ({@code permanent}: the failure could never succeed, so it was not retried): the
   * message is handed to {@link FailureHandler#onGiveUp} (dead letters plug in there) and the
   * partition moves on.
   */
  record GiveUp(String reason, boolean permanent) implements FailureDecision {
    public GiveUp {
      Objects.requireNonNull(reason, "reason");
    }

    /** Gives up after retrying (not a permanent failure). */
    public GiveUp(String reason) {
      this(reason, false);
    }
  }
}
