package dev.postbox.jdbc.internal;

import dev.postbox.core.time.Sleeper;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Spaces writes at least one interval apart across every caller sharing it (the replayer of each
 * operator shares one), waiting with the injected {@link Sleeper} and measuring with the injected
 * {@link Clock}. Thread-safe.
 */
public final class Pacer {

  private final Duration interval;
  private final Clock clock;
  private final Sleeper sleeper;
  private final ReentrantLock lock = new ReentrantLock();
  private Optional<Instant> nextWrite = Optional.empty(); // guarded by lock

  public Pacer(Duration interval, Clock clock, Sleeper sleeper) {
    this.interval = interval;
    this.clock = clock;
    this.sleeper = sleeper;
  }

  /** Waits until one interval after the previous turn, then takes this turn. */
  public void awaitTurn() throws InterruptedException {
    lock.lock();
    try {
      Instant now = clock.instant();
      if (nextWrite.isPresent() && now.isBefore(nextWrite.get())) {
        sleeper.sleep(Duration.between(now, nextWrite.get()));
        now = nextWrite.get();
      }
      nextWrite = Optional.of(now.plus(interval));
    } finally {
      lock.unlock();
    }
  }
}
