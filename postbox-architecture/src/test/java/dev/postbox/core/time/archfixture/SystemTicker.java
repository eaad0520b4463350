package dev.postbox.core.time.archfixture;

/** Inside a time package: the one place allowed to read the system's monotonic clock. */
public final class SystemTicker {
  private SystemTicker() {}

  public static long read() {
    return System.nanoTime();
  }
}
