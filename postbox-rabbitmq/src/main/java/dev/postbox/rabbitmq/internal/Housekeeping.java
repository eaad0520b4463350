package dev.postbox.rabbitmq.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A subscriber's background threads (the inbox purge, the drain of parked keys): started with the
 * subscriber, interrupted at its close, and joined where a thread may still be working for it.
 */
public final class Housekeeping {

  private final List<Thread> interruptOnly = new ArrayList<>();
  private final List<Thread> joined = new ArrayList<>();

  /** Starts {@code work} on a virtual thread named {@code name}, stopped by an interrupt. */
  public synchronized void start(String name, Runnable work) {
    interruptOnly.add(Thread.ofVirtual().name(name).start(work));
  }

  /**
   * Starts {@code work} on a virtual thread named {@code name}; {@link #stop} interrupts it and
   * waits for it (it may be finishing a unit of work that must not be cut short).
   */
  public synchronized void startJoined(String name, Runnable work) {
    joined.add(Thread.ofVirtual().name(name).start(work));
  }

  /** Interrupts every thread and waits up to {@code join} for each joined one. */
  public synchronized void stop(Duration join) {
    interruptOnly.forEach(Thread::interrupt);
    joined.forEach(Thread::interrupt);
    for (Thread t : joined) {
      try {
        t.join(join.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
