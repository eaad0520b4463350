package dev.postbox.kafka.internal;

import java.time.Clock;
import java.time.Instant;
import java.util.Optional;

/**
 * Whether a subscriber's poll loop runs, when it last returned from {@code poll()}, and why it died
 * if it did. Written by the poll thread, read by anyone. Thread-safe.
 */
public final class PollLoopHealth {

  private final Clock clock;
  private volatile boolean alive;
  private volatile Throwable failure;
  private volatile Instant lastPoll;

  /** Times polls with {@code clock}. */
  public PollLoopHealth(Clock clock) {
    this.clock = clock;
  }

  /** The poll loop starts. */
  public void started() {
    alive = true;
  }

  /** {@code poll()} returned. */
  public void polled() {
    lastPoll = clock.instant();
  }

  /** The poll loop ended: closed ({@code cause} empty) or failed. */
  public void ended(Optional<Throwable> cause) {
    cause.ifPresent(c -> failure = c);
    alive = false;
  }

  /** Whether the poll loop runs. */
  public boolean alive() {
    return alive;
  }

  /** Why the poll loop died, if it did. */
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure);
  }

  /** When {@code poll()} last returned, if it did. */
  public Optional<Instant> lastPoll() {
    return Optional.ofNullable(lastPoll);
  }
}
