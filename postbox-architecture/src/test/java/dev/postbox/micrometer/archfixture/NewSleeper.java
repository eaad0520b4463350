package dev.postbox.micrometer.archfixture;

/** A violation the freeze store has not seen: must fail. */
public final class NewSleeper {
  private NewSleeper() {}

  public static void pause() throws InterruptedException {
    Thread.sleep(1);
  }
}
