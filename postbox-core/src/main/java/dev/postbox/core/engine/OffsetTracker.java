package dev.postbox.core.engine;

import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
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
  private final Ticker ticker;
  private final Sleeper sleeper;

  /** A tracker on the system's time. */
  public OffsetTracker() {
    this(Ticker.SYSTEM, Sleeper.SYSTEM);
  }

  /**
   * A tracker whose {@link #revokeAndAwait} measures its deadline with {@code ticker}. With {@link
   * Sleeper#SYSTEM} the wait for running records ends as soon as the last one ends; any other
   * sleeper (a test's {@code FakeTime}) is used between checks instead.
   */
  public OffsetTracker(Ticker ticker, Sleeper sleeper) {
    this.ticker = ticker;
    this.sleeper = sleeper;
  }

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
        // one by one: removeAll would scan the map against the collection when it is the larger
        for (Long offset : offsets) {
          pending.remove(offset);
        }
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
    return awaitIdle(ticker.deadlineIn(timeout), ticker::nanos);
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
        waitSlice(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
      }
      return running;
    } finally {
      lock.unlock();
    }
  }

  /** Waits up to {@code nanos} for the running records to end; the lock is held on entry. */
  private void waitSlice(long nanos) throws InterruptedException {
    if (sleeper == Sleeper.SYSTEM) {
      idle.awaitNanos(nanos); // woken at once when the last running record ends
      return;
    }
    lock.unlock();
    try {
      sleeper.sleep(Duration.ofNanos(nanos));
    } finally {
      lock.lock();
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
