package dev.postbox.rabbitmq.internal;

import dev.postbox.core.time.Ticker;
import java.time.Duration;

/** Counts deliveries handed to the workers and not yet done; closing waits for zero. */
public final class InFlight {

  private int count;

  /** One more delivery in flight. */
  public synchronized void started() {
    count++;
  }

  /** One delivery done. */
  public synchronized void finished() {
    count--;
    if (count <= 0) {
      notifyAll();
    }
  }

  /** Deliveries in flight now. */
  public synchronized int get() {
    return count;
  }

  /** Waits until none is in flight or {@code timeout} (measured on {@code ticker}) passed. */
  public synchronized boolean awaitZero(Duration timeout, Ticker ticker)
      throws InterruptedException {
    long start = ticker.nanos();
    while (count > 0) {
      long left = timeout.toNanos() - (ticker.nanos() - start);
      if (left <= 0) {
        return false;
      }
      wait(Math.max(1, left / 1_000_000));
    }
    return true;
  }
}
