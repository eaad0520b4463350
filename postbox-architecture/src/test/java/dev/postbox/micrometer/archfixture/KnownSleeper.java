package dev.postbox.micrometer.archfixture;

/** A violation recorded in a (test-only, in-memory) freeze store: tolerated. */
public final class KnownSleeper {
  private KnownSleeper() {}

  public static void pause() throws InterruptedException {
    Thread.sleep(1);
  }
}
