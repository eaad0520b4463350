package dev.postbox.verify;

import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Lets a fault through only once some business transaction committed since the last fault it let
 * through (the first needs none): so every counted fault of its kind has progress before it, and a
 * high fault rate cannot keep the producers down for a whole phase. Several injector threads may
 * share one gate (every database fault shares one); each commit lets exactly one of them through.
 * Thread-safe.
 */
final class ProgressGate {

  /** How often a waiting fault asks for the commit count again. */
  static final Duration RECHECK = Duration.ofMillis(200);

  private final LongSupplier commits;
  private final Sleeper sleeper;
  private long commitsAtLast = -1;

  /** A gate over {@code commits} (the phase's committed business transactions so far). */
  ProgressGate(LongSupplier commits, Sleeper sleeper) {
    this.commits = commits;
    this.sleeper = sleeper;
  }

  /** Forgets the last fault let through (a new round: its first fault needs no progress). */
  synchronized void reset() {
    commitsAtLast = -1;
  }

  /**
   * Waits until the commit count moved past the one seen when the last fault was let through, and
   * lets this one through; false if {@code stopped} turned true (or the thread was interrupted)
   * while waiting.
   */
  boolean await(BooleanSupplier stopped) {
    while (!stopped.getAsBoolean()) {
      if (tryPass()) {
        return true;
      }
      try {
        sleeper.sleep(RECHECK);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }

  private synchronized boolean tryPass() {
    long now = commits.getAsLong();
    if (now > commitsAtLast) {
      commitsAtLast = now;
      return true;
    }
    return false;
  }
}
