package dev.postbox.jdbc.cdc.internal;

import java.time.Instant;
import java.util.ArrayDeque;

/**
 * Which slot position may be confirmed: the end LSN of the latest transaction whose every outbox
 * row (and every earlier transaction's) the broker acknowledged and the outbox marked.
 *
 * <p>Progress is tracked as (commit LSN, index within the transaction), never as an LSN alone:
 * several rows share their transaction's commit LSN, so "acknowledged up to LSN x" cannot say
 * whether the last rows of that transaction went out (Debezium lost events exactly there,
 * DBZ-1554). A transaction is confirmed only when its last row is done; a restart then resumes
 * after it, and a transaction that was done only in part is streamed again from its first row.
 *
 * <p>Transactions are {@linkplain #received registered} in commit order before any of their rows
 * can be {@linkplain #done done}; rows are done in stream order. Thread-safe.
 */
public final class CommitTracker {

  private record Open(long commitLsn, long endLsn, int rows, Instant commitTime) {}

  private final ArrayDeque<Open> open = new ArrayDeque<>();
  private final long epoch;
  private long confirmable;

  /** A tracker whose slot is confirmed up to {@code confirmed} (0 when unknown). */
  public CommitTracker(long confirmed) {
    this(0, confirmed);
  }

  /**
   * A tracker for what is streamed under the slot lease's {@code epoch}, the slot confirmed up to
   * {@code confirmed}.
   */
  public CommitTracker(long epoch, long confirmed) {
    this.epoch = epoch;
    this.confirmable = confirmed;
  }

  /** The lease epoch this tracker's transactions were streamed under. */
  public long epoch() {
    return epoch;
  }

  /** A transaction the stream delivered, with its number of outbox rows (possibly none). */
  public synchronized void received(long commitLsn, long endLsn, int rows) {
    received(commitLsn, endLsn, rows, null);
  }

  /** As {@link #received(long, long, int)}, with the transaction's commit time (may be null). */
  public synchronized void received(long commitLsn, long endLsn, int rows, Instant commitTime) {
    Open last = open.peekLast();
    if (last != null && commitLsn <= last.commitLsn()) {
      throw new IllegalStateException(
          "transactions out of commit order: " + commitLsn + " after " + last.commitLsn());
    }
    open.addLast(new Open(commitLsn, endLsn, rows, commitTime));
    settleEmpty();
  }

  /** The commit time of the oldest transaction received and not yet done; null when none. */
  public synchronized Instant oldestOpenCommitTime() {
    for (Open o : open) {
      if (o.commitTime() != null) {
        return o.commitTime();
      }
    }
    return null;
  }

  /**
   * Every row up to and including row {@code index} of the transaction committed at {@code
   * commitLsn} is done (acknowledged and marked); returns the confirmable LSN.
   */
  public synchronized long done(long commitLsn, int index) {
    while (!open.isEmpty()) {
      Open head = open.peekFirst();
      boolean whole =
          head.commitLsn() < commitLsn
              || (head.commitLsn() == commitLsn && index >= head.rows() - 1);
      if (!whole) {
        break;
      }
      open.removeFirst();
      confirmable = Math.max(confirmable, head.endLsn());
    }
    settleEmpty();
    return confirmable;
  }

  /**
   * The stream is between transactions and everything received is done: the server has sent all it
   * decoded up to {@code serverLsn}, so that position may be confirmed too (otherwise a quiet
   * outbox in a busy database would keep the slot, and the WAL, where it is). Returns the
   * confirmable LSN.
   */
  public synchronized long idle(long serverLsn) {
    if (open.isEmpty()) {
      confirmable = Math.max(confirmable, serverLsn);
    }
    return confirmable;
  }

  /** The latest confirmable LSN. */
  public synchronized long confirmable() {
    return confirmable;
  }

  /** Transactions received and not yet wholly done. */
  public synchronized int pending() {
    return open.size();
  }

  // Transactions without outbox rows at the head are done as soon as everything before them is.
  private void settleEmpty() {
    while (!open.isEmpty() && open.peekFirst().rows() == 0) {
      confirmable = Math.max(confirmable, open.removeFirst().endLsn());
    }
  }
}
