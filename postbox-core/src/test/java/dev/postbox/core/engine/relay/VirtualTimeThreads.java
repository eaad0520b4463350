package dev.postbox.core.engine.relay;

import dev.postbox.core.time.FakeTime;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Threads that wait on {@link FakeTime} and run one at a time, in the order of their wake-up times
 * (ties in the order the threads were started): a deterministic schedule of several loops that each
 * sleep, such as two relays' heartbeat and publishing threads. A thread runs until it sleeps on
 * {@link #sleeper()} or ends; {@link #runUntil} then wakes the earliest sleeper, moving the fake
 * time to its wake-up time. Nothing waits on the wall clock.
 */
final class VirtualTimeThreads implements AutoCloseable {

  private final FakeTime time;
  private final Object lock = new Object();
  private final List<Thread> threads = new ArrayList<>();
  private final Map<Thread, Long> wakeAt = new HashMap<>(); // sleeping threads
  private int active; // started threads neither sleeping nor ended
  private Thread released; // woken by runUntil, not yet running

  VirtualTimeThreads(FakeTime time) {
    this.time = time;
  }

  /** The sleeper of the threads started here. */
  Sleeper sleeper() {
    return this::sleep;
  }

  /** Starts {@code body} on a new thread and returns once it sleeps or ends. */
  void start(String name, Runnable body) throws InterruptedException {
    Thread t =
        Thread.ofPlatform()
            .name(name)
            .daemon(true)
            .unstarted(() -> {
              try {
                body.run();
              } finally {
                synchronized (lock) {
                  active--;
                  lock.notifyAll();
                }
              }
            });
    synchronized (lock) {
      threads.add(t);
      active++;
      t.start();
      awaitQuiet();
    }
  }

  /** Wakes the sleepers in time order until the next one would wake after {@code until}. */
  void runUntil(Duration until) throws InterruptedException {
    long end = until.toNanos();
    synchronized (lock) {
      while (true) {
        awaitQuiet();
        Thread next = null;
        long at = Long.MAX_VALUE;
        for (Thread t : threads) {
          Long w = wakeAt.get(t);
          if (w != null && w < at) {
            at = w;
            next = t;
          }
        }
        if (next == null || at > end) {
          if (time.nanos() < end) {
            time.advance(Duration.ofNanos(end - time.nanos()));
          }
          return;
        }
        time.advance(Duration.ofNanos(at - time.nanos()));
        wakeAt.remove(next);
        active++;
        released = next;
        lock.notifyAll();
      }
    }
  }

  private void sleep(Duration d) throws InterruptedException {
    Thread me = Thread.currentThread();
    synchronized (lock) {
      wakeAt.put(me, time.nanos() + d.toNanos());
      active--;
      lock.notifyAll();
      try {
        while (released != me) {
          lock.wait();
        }
      } catch (InterruptedException e) {
        wakeAt.remove(me);
        active++; // runs on to its end
        throw e;
      }
      released = null;
    }
  }

  private void awaitQuiet() throws InterruptedException {
    while (active > 0 || released != null) {
      lock.wait();
    }
  }

  /** Interrupts every thread and waits for them to end. */
  @Override
  public void close() throws InterruptedException {
    for (Thread t : threads) {
      t.interrupt();
    }
    for (Thread t : threads) {
      t.join();
    }
  }
}
