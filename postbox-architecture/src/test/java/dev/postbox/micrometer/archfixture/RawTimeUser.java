package dev.postbox.micrometer.archfixture;

import java.time.Instant;
import java.util.function.LongSupplier;

/** Breaks "no raw time in library code" on purpose, once for each kind of call. */
public final class RawTimeUser {
  private RawTimeUser() {}

  public static long elapsedNanos() {
    long t0 = System.nanoTime();
    return System.nanoTime() - t0;
  }

  public static LongSupplier ticker() {
    return System::nanoTime; // a method reference counts too
  }

  public static long wallMillis() {
    return System.currentTimeMillis() + Instant.now().toEpochMilli();
  }

  public static void pause() throws InterruptedException {
    Thread.sleep(1);
  }
}
