package dev.postbox.bench.internal;

/** Events per second of a timed run. */
final class Rate {

  private Rate() {}

  /** {@code events} per second since {@code startNanos} ({@link System#nanoTime()}). */
  static double since(long startNanos, long events) {
    double secs = (System.nanoTime() - startNanos) / 1e9;
    return events / Math.max(secs, 1e-9);
  }
}
