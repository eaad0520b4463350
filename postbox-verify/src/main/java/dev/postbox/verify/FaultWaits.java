package dev.postbox.verify;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * How the cluster faults wait for a cluster to move on: poll a condition that may throw while a
 * broker or node is down or moving (a throw counts as "not yet"), until it holds or a bound passes.
 * Why our own: Awaitility throws on the bound, and a fault must log what did not happen and go on.
 * Stateless.
 */
final class FaultWaits {

  private FaultWaits() {}

  /**
   * Polls {@code condition} every {@code pollMs} until true (true) or {@code bound} passed, or this
   * thread is interrupted (false).
   */
  static boolean until(Duration bound, long pollMs, BooleanSupplier condition) {
    long deadline = System.nanoTime() + bound.toNanos();
    while (true) {
      try {
        if (condition.getAsBoolean()) {
          return true;
        }
      } catch (RuntimeException e) {
        // no answer now (a broker or node is down or moving): ask again
      }
      if (System.nanoTime() - deadline >= 0 || Thread.currentThread().isInterrupted()) {
        return false;
      }
      Campaign.sleep(pollMs);
    }
  }

  /** Milliseconds since {@code t0} (a {@link System#nanoTime()} reading). */
  static long millisSince(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }
}
