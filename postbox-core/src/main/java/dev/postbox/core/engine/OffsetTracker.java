package dev.postbox.core.engine;

import java.time.Duration;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Offsets of one partition: which records were dispatched, which are running, which finished. The
 * committable offset is the lowest unfinished one (or one past the highest dispatched when all
 * finished), so a committed offset never passes a record that is not finished, however records of
 * different keys complete.
 *
 * <p>Thread-safe.
 */
public final class OffsetTracker {

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition idle = lock.newCondition();
  // unfinished offsets and their record timestamps (epoch millis, -1 when unknown)
  private final TreeMap<Long, Long> pending = new TreeMap<>();
  private long highestDispatched = -1;
  private int running;
  private boolean revoked;

  /** A record was handed to a worker. */
  public void dispatched(long offset) {
    dispatched(offset, -1);
  }

  /** A record with timestamp {@code timestampMillis} (-1: unknown) was handed to a worker. */
  public void dispatched(long offset, long timestampMillis) {
    lock.lock();
    try {
      pending.put(offset, timestampMillis);
      highestDispatched = Math.max(highestDispatched, offset);
    } finally {
      lock.unlock();
    }
  }

  /**
   * A worker is about to run the record; {@code false} if the partition was revoked (do not run
   * it).
   */
  public boolean tryStart() {
    lock.lock();
    try {
      if (revoked) {
        return false;
      }
      running++;
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * The record started by {@link #tryStart()} ended: finished (commit may pass it) or abandoned (it
   * may not).
   */
  public void ended(long offset, boolean finished) {
    ended(java.util.List.of(offset), finished);
  }

  /** A batch started by one {@link #tryStart()} ended; its offsets finish (or not) together. */
  public void ended(java.util.Collection<Long> offsets, boolean finished) {
    lock.lock();
    try {
      running--;
      if (finished) {
        pending.keySet().removeAll(offsets);
      }
      if (running == 0) {
        idle.signalAll();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Whether the partition was revoked from this consumer. */
  public boolean revoked() {
    lock.lock();
    try {
      return revoked;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Marks the partition revoked (records not yet started will not start) and waits up to {@code
   * timeout} for the running ones to end. Returns how many are still running.
   */
  public int revokeAndAwait(Duration timeout) throws InterruptedException {
    markRevoked();
    return awaitIdle(System.nanoTime() + timeout.toNanos(), System::nanoTime);
  }

  /** Marks the partition revoked: records not yet started will not start. */
  public void markRevoked() {
    lock.lock();
    try {
      revoked = true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until no record runs or {@code nanoTime} passes {@code deadlineNanos} (re-read at least
   * every 100 ms, so a test's clock may move it). Returns how many are still running.
   */
  public int awaitIdle(long deadlineNanos, LongSupplier nanoTime) throws InterruptedException {
    lock.lock();
    try {
      while (running > 0) {
        long left = deadlineNanos - nanoTime.getAsLong();
        if (left <= 0) {
          break;
        }
        idle.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
      }
      return running;
    } finally {
      lock.unlock();
    }
  }

  /** Records started and not yet ended. */
  public int running() {
    lock.lock();
    try {
      return running;
    } finally {
      lock.unlock();
    }
  }

  /** The offset to commit (the next record to read after a restart), if anything was dispatched. */
  public OptionalLong committable() {
    lock.lock();
    try {
      if (highestDispatched < 0) {
        return OptionalLong.empty();
      }
      return OptionalLong.of(pending.isEmpty() ? highestDispatched + 1 : pending.firstKey());
    } finally {
      lock.unlock();
    }
  }

  /**
   * The timestamp (epoch millis) of the lowest unfinished record, the one the committed offset
   * points at; empty when every dispatched record finished or its timestamp is unknown.
   */
  public OptionalLong oldestUnfinishedTimestamp() {
    lock.lock();
    try {
      if (pending.isEmpty()) {
        return OptionalLong.empty();
      }
      long ts = pending.firstEntry().getValue();
      return ts < 0 ? OptionalLong.empty() : OptionalLong.of(ts);
    } finally {
      lock.unlock();
    }
  }

  /** Records dispatched and not finished. */
  public int unfinished() {
    lock.lock();
    try {
      return pending.size();
    } finally {
      lock.unlock();
    }
  }
}
