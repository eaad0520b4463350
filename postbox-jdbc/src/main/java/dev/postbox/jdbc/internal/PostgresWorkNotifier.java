package dev.postbox.jdbc.internal;

import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes an idle relay when rows arrive: the idle mark the outbox's insert trigger reads (a writer
 * notifies only while a relay is idle, migration V8), {@code LISTEN postbox_outbox} on one held
 * connection, and {@link #awaitWork}, which also watches the writers that may have missed the mark.
 * Without notifications, or while it cannot listen, it polls. Waits on the injected {@link Ticker}
 * and {@link Sleeper}. Thread-safe.
 */
final class PostgresWorkNotifier {

  // Logged under the store's name, as before the store was split.
  private static final Logger log = LoggerFactory.getLogger(PostgresRelayStoreImpl.class);

  // An upsert, so a mark made while the row is forgotten is not lost.
  private static final String MARK_IDLE =
      "INSERT INTO postbox_relay_instance AS i (instance_id, seen_at, idle) VALUES (?, now(), ?)"
          + " ON CONFLICT (instance_id) DO UPDATE SET idle = excluded.idle"
          + " WHERE i.idle <> excluded.idle";
  // Transaction ids as text: pgjdbc has no Java type for xid8.
  private static final String RUNNING_XIDS =
      "SELECT array_agg(x::text) FROM pg_snapshot_xip(pg_current_snapshot()) x";
  private static final String STILL_RUNNING =
      "SELECT array_agg(x) FROM unnest(?::text[]) t(x) WHERE pg_xact_status(x::xid8) = 'in progress'";

  private final DataSource dataSource;
  private final boolean notifications;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private final ReentrantLock listenLock = new ReentrantLock();
  // The idle mark last requested per instance (absent: never marked, the column default applies).
  private final ConcurrentMap<String, Boolean> idleMarks = new ConcurrentHashMap<>();
  private Connection listenConnection;
  // Transactions that were running when this relay marked itself idle (guarded by listenLock).
  private WriterWatch writers = WriterWatch.NONE;

  PostgresWorkNotifier(
      DataSource dataSource, boolean notifications, Ticker ticker, Sleeper sleeper) {
    this.dataSource = dataSource;
    this.notifications = notifications;
    this.ticker = ticker;
    this.sleeper = sleeper;
  }

  /** The idle mark last requested for the instance; idle (the column default) if none was. */
  boolean idleMark(String instanceId) {
    return idleMarks.getOrDefault(instanceId, true);
  }

  /** Forgets the instance's idle mark (it unregistered). */
  void forget(String instanceId) {
    idleMarks.remove(instanceId);
  }

  /** Marks the instance idle (writers notify) or busy (they need not). */
  void markIdle(String instanceId, boolean idle) {
    // before the statement: a heartbeat that re-inserts a forgotten row meanwhile uses it too
    idleMarks.put(instanceId, idle);
    Transactions.inTransaction(
        dataSource,
        "marking the relay " + (idle ? "idle" : "busy") + " failed",
        c -> {
          try (Statement s = c.createStatement();
              PreparedStatement ps = c.prepareStatement(MARK_IDLE)) {
            // a hint for the insert trigger, not state to keep across a crash: no WAL flush wait
            s.execute("SET LOCAL synchronous_commit TO off");
            ps.setString(1, instanceId);
            ps.setBoolean(2, idle);
            return ps.executeUpdate();
          }
        },
        OutboxException::new);
    if (idle && notifications) {
      watchWritersRunningNow();
    } else {
      listenLock.lock();
      try {
        writers = WriterWatch.NONE;
      } finally {
        listenLock.unlock();
      }
    }
  }

  /**
   * Notes the transactions in progress right after the idle mark committed. A writer whose insert
   * trigger read the relay as busy read it before that commit, so it was running then: it is one of
   * these (or already committed, and the next claim sees its rows). Until they end, {@link
   * #awaitWork} polls their status and reports work when any ends, so their rows are not left for
   * the poll interval. (Writers at REPEATABLE READ or SERIALIZABLE read the mark with their
   * transaction's first snapshot and may still be missed: their rows wait for the poll.)
   */
  private void watchWritersRunningNow() {
    listenLock.lock();
    try {
      if (listenConnection == null) {
        openListener();
      }
      if (listenConnection == null) {
        writers = WriterWatch.NONE;
        return;
      }
      try (Statement s = listenConnection.createStatement();
          ResultSet rs = s.executeQuery(RUNNING_XIDS)) {
        rs.next();
        java.sql.Array a = rs.getArray(1);
        writers = a == null ? WriterWatch.NONE : WriterWatch.of((Object[]) a.getArray());
      }
    } catch (SQLException e) {
      log.warn("LISTEN connection broke; polling until it is reopened", e);
      writers = WriterWatch.NONE;
      close();
    } finally {
      listenLock.unlock();
    }
  }

  /**
   * Waits up to {@code timeout} for a notification, or for a watched writer to end; returns whether
   * work may have arrived (false: the timeout passed, or the store polls).
   */
  boolean awaitWork(Duration timeout) throws InterruptedException {
    if (!notifications) {
      sleeper.sleep(timeout);
      return false;
    }
    listenLock.lock();
    try {
      if (listenConnection == null) {
        openListener();
      }
      if (listenConnection == null) {
        sleeper.sleep(timeout); // could not listen: poll
        return false;
      }
      PGConnection pg = listenConnection.unwrap(PGConnection.class);
      long deadline = ticker.deadlineIn(timeout);
      long step = WriterWatch.FIRST_STEP_MILLIS;
      while (!writers.isEmpty()) {
        long left = (deadline - ticker.nanos()) / 1_000_000;
        if (left <= 0) {
          return false;
        }
        PGNotification[] got = pg.getNotifications((int) Math.max(1, Math.min(step, left)));
        if (got != null && got.length > 0) {
          return true;
        }
        WriterWatch still = writers.stillRunning(listenConnection, STILL_RUNNING);
        if (still.size() < writers.size()) {
          writers = still;
          return true; // a writer that may have missed us ended: claim again
        }
        step = Math.min(step * 2, WriterWatch.MAX_STEP_MILLIS);
      }
      long left = Math.max(1, (deadline - ticker.nanos()) / 1_000_000);
      PGNotification[] got = pg.getNotifications((int) Math.min(Integer.MAX_VALUE, left));
      return got != null && got.length > 0;
    } catch (SQLException e) {
      log.warn("LISTEN connection broke; polling until it is reopened", e);
      writers = WriterWatch.NONE;
      close();
      return false;
    } finally {
      listenLock.unlock();
    }
  }

  private void openListener() {
    try {
      Connection c = dataSource.getConnection();
      c.setAutoCommit(true);
      try (Statement s = c.createStatement()) {
        s.execute("LISTEN postbox_outbox");
      }
      listenConnection = c;
    } catch (SQLException e) {
      log.warn("cannot LISTEN on postbox_outbox; polling", e);
    }
  }

  /** Closes the listening connection, if open (reopened by the next wait). */
  void close() {
    listenLock.lock();
    try {
      if (listenConnection != null) {
        try {
          listenConnection.close();
        } catch (SQLException ignored) {
          // already broken
        }
        listenConnection = null;
      }
    } finally {
      listenLock.unlock();
    }
  }

  /** Transaction ids (as text) being watched for their end; immutable. */
  private record WriterWatch(String[] xids) {
    static final WriterWatch NONE = new WriterWatch(new String[0]);
    static final long FIRST_STEP_MILLIS = 2;
    static final long MAX_STEP_MILLIS = 100;

    static WriterWatch of(Object[] xids) {
      if (xids == null || xids.length == 0) {
        return NONE;
      }
      String[] copy = new String[xids.length];
      for (int i = 0; i < xids.length; i++) {
        copy[i] = String.valueOf(xids[i]);
      }
      return new WriterWatch(copy);
    }

    boolean isEmpty() {
      return xids.length == 0;
    }

    int size() {
      return xids.length;
    }

    WriterWatch stillRunning(Connection c, String sql) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setArray(1, c.createArrayOf("text", xids));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          java.sql.Array a = rs.getArray(1);
          return a == null ? NONE : of((Object[]) a.getArray());
        }
      }
    }
  }
}
