package dev.postbox.kafka.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Counts the records read and not yet finished, and tells the poll thread when to stop reading
 * ({@link #full()}: at {@code max}) and when to read again ({@link #resumable()}: at half of it or
 * less).
 *
 * <p>While reading is paused the poll thread waits in {@link #awaitResumable(Duration)}, and the
 * worker whose {@link #finished(int)} brings the count down to the resume level wakes it at once.
 * Without that wake-up a paused poll thread only noticed the freed room when its poll timed out:
 * with fast handlers the workers drained the backlog in a few milliseconds and then sat idle for
 * the rest of the poll timeout, on every pause.
 *
 * <p>Thread-safe: workers call {@link #finished(int)}, the poll thread the rest.
 */
public final class InFlightLimit {

  private final int max;
  private final int resumeAt;
  private final AtomicInteger count = new AtomicInteger();
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition roomMade = lock.newCondition();

  /** A limit of {@code max} unfinished records (positive); reading resumes at {@code max / 2}. */
  public InFlightLimit(int max) {
    if (max < 1) {
      throw new IllegalArgumentException("max must be positive, was " + max);
    }
    this.max = max;
    this.resumeAt = max / 2;
  }

  /** {@code n} records were handed to workers. */
  public void dispatched(int n) {
    count.addAndGet(n);
  }

  /** {@code n} records ended (finished or abandoned); wakes a waiting poll thread if due. */
  public void finished(int n) {
    int now = count.addAndGet(-n);
    if (now <= resumeAt && now + n > resumeAt) {
      lock.lock();
      try {
        roomMade.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  /** Records read and not yet finished. */
  public int get() {
    return count.get();
  }

  /** Whether reading must pause: {@code max} or more records are unfinished. */
  public boolean full() {
    return count.get() >= max;
  }

  /** Whether paused reading may resume: at most {@code max / 2} records are unfinished. */
  public boolean resumable() {
    return count.get() <= resumeAt;
  }

  /**
   * Waits until {@link #resumable()} or {@code timeout} passed; returns {@link #resumable()}. An
   * interrupt ends the wait early and stays set.
   */
  public boolean awaitResumable(Duration timeout) {
    long left = timeout.toNanos();
    lock.lock();
    try {
      while (!resumable() && left > 0) {
        left = roomMade.awaitNanos(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      lock.unlock();
    }
    return resumable();
  }
}
