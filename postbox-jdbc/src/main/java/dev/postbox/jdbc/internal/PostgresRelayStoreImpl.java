package dev.postbox.jdbc.internal;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link RelayStore} on PostgreSQL. */
public final class PostgresRelayStoreImpl implements RelayStore {

  private static final Logger log = LoggerFactory.getLogger(PostgresRelayStoreImpl.class);

  // A row that another relay forgot (this one was stopped longer than the TTL) comes back with the
  // idle mark this relay last wrote, not the column default (idle): a relay that was draining when
  // it stopped would otherwise read as idle, and every insert would notify until it went idle and
  // busy again.
  private static final String HEARTBEAT =
      "INSERT INTO postbox_relay_instance (instance_id, seen_at, idle) VALUES (?, now(), ?)"
          + " ON CONFLICT (instance_id) DO UPDATE SET seen_at = now()";
  // A dead instance's row may be locked by a transaction its process left open when it was paused
  // (a heartbeat or an idle mark): skip it rather than wait for that process, and count only the
  // instances seen within the TTL, so a paused one neither blocks nor shrinks the fair share.
  private static final String FORGET_DEAD =
      "DELETE FROM postbox_relay_instance WHERE instance_id IN (SELECT instance_id"
          + " FROM postbox_relay_instance WHERE seen_at < now() - make_interval(secs => ?)"
          + " FOR UPDATE SKIP LOCKED)";
  private static final String COUNT_LIVE =
      "SELECT count(*) FROM postbox_relay_instance"
          + " WHERE seen_at >= now() - make_interval(secs => ?)";
  private static final String RENEW =
      "UPDATE postbox_relay_lane SET lease_until = now() + make_interval(secs => ?)"
          + " WHERE owner = ? RETURNING lane, epoch";
  private static final String ACQUIRE =
      "UPDATE postbox_relay_lane l SET owner = ?, epoch = l.epoch + 1,"
          + " lease_until = now() + make_interval(secs => ?)"
          + " WHERE l.lane IN (SELECT lane FROM postbox_relay_lane"
          + "   WHERE owner IS NULL OR lease_until <= now() ORDER BY lane LIMIT ? FOR UPDATE SKIP LOCKED)"
          + " RETURNING l.lane, l.epoch";
  private static final String RELEASE =
      "UPDATE postbox_relay_lane l SET owner = NULL, lease_until = '-infinity'"
          + " FROM unnest(?::smallint[], ?::bigint[]) AS mine(lane, epoch)"
          + " WHERE l.lane = mine.lane AND l.epoch = mine.epoch AND l.owner = ?";
  private static final String RELEASE_ALL =
      "UPDATE postbox_relay_lane SET owner = NULL, lease_until = '-infinity' WHERE owner = ?";
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
  private static final String UNREGISTER =
      "DELETE FROM postbox_relay_instance WHERE instance_id = ?";
  private static final String VALID_LANES =
      "SELECT l.lane FROM postbox_relay_lane l"
          + " JOIN unnest(?::smallint[], ?::bigint[]) AS mine(lane, epoch) ON mine.lane = l.lane"
          + " WHERE l.epoch = mine.epoch AND l.owner = ? AND l.lease_until > now()";
  private static final String CLAIM_SELECT =
      "SELECT position, lane, created_at, attempts, "
          + "message_id, topic, msg_key, type, schema_version, occurred_at, source, correlation_id,"
          + " causation_id, tenant, headers, content_type, payload"
          + " FROM postbox_outbox o"
          + " WHERE published_at IS NULL AND failed_at IS NULL AND lane = ANY(?::smallint[])";
  private static final String CLAIM = CLAIM_SELECT + " ORDER BY position LIMIT ?";
  // One statement per batch, also recording where each row went: the acknowledgements travel as
  // three parallel arrays joined on position (no per-row statements, no temporary table).
  // The fence is evaluated first, on its own: the lanes this relay still holds at the epochs it
  // claimed under, as one array from the 64-row lease table (same statement snapshot as the
  // update). Joining postbox_relay_lane and the leases into the outbox side instead left the
  // planner to estimate "outbox rows in my lanes" from the lease table's statistics, which lag
  // behind ownership (a restarted relay's new owner token is in none of them, say): it estimated 9
  // rows for 15,000, and a nested loop that rescans the 2,000 acknowledgements for each of them
  // then looks cheap (30 million comparisons: 3 s on a quiet machine; a 2,000-row mark ran
  // CPU-bound for 7.5 s in the demo). Now the outbox is reached by position only.
  // Package-private: MarkPublishedPlanTest explains it.
  // The lease fence shared by the mark, the delete and the failed mark: parameters lanes, epochs,
  // owner; the statement then reads `held.lanes`.
  private static final String HELD =
      "WITH held AS MATERIALIZED (SELECT array_agg(l.lane) AS lanes FROM postbox_relay_lane l"
          + " JOIN unnest(?::smallint[], ?::bigint[]) AS mine(lane, epoch) ON mine.lane = l.lane"
          + " WHERE l.epoch = mine.epoch AND l.owner = ?)";
  static final String MARK_PUBLISHED =
      HELD
          + " UPDATE postbox_outbox o SET published_at = now(),"
          + " published_partition = nullif(a.part, -1), published_offset = nullif(a.off, -1)"
          + " FROM held, unnest(?::bigint[], ?::int[], ?::bigint[]) AS a(pos, part, off)"
          + " WHERE o.position = a.pos AND o.lane = ANY(held.lanes)";
  private static final String BACKLOG =
      "SELECT (SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL AND failed_at IS NULL),"
          + " (SELECT extract(epoch FROM clock_timestamp() - created_at) FROM postbox_outbox"
          + "   WHERE published_at IS NULL AND failed_at IS NULL ORDER BY position LIMIT 1)";
  // The same fence as the mark, for the same reason (the outbox reached by position only).
  private static final String DELETE_PUBLISHED =
      HELD
          + " DELETE FROM postbox_outbox o USING held"
          + " WHERE o.position = ANY(?::bigint[]) AND o.lane = ANY(held.lanes)";
  private static final String MARK_FAILED =
      HELD
          + " UPDATE postbox_outbox o SET failed_at = now(), last_error = ?, attempts = o.attempts + 1"
          + " FROM held WHERE o.position = ANY(?::bigint[]) AND o.lane = ANY(held.lanes)";
  private static final String MARK_HOLDING =
      HELD
          + " UPDATE postbox_outbox o SET failed_at = now(), last_error = ?, attempts = o.attempts + 1,"
          + " hold = ? FROM held WHERE o.position = ANY(?::bigint[]) AND o.lane = ANY(held.lanes)"
          + " AND o.published_at IS NULL";
  private static final String PURGE =
      "DELETE FROM postbox_outbox WHERE position IN (SELECT position FROM postbox_outbox"
          + " WHERE lane = ANY(?::smallint[]) AND published_at < now() - make_interval(secs => ?)"
          + " LIMIT ?)";

  private final DataSource dataSource;
  private final boolean notifications;
  private final int laneCount;
  private final String schema;
  private final ReentrantLock listenLock = new ReentrantLock();
  // The idle mark last requested per instance (absent: never marked, the column default applies).
  private final ConcurrentMap<String, Boolean> idleMarks = new ConcurrentHashMap<>();
  private Connection listenConnection;
  // Transactions that were running when this relay marked itself idle (guarded by listenLock).
  private WriterWatch writers = WriterWatch.NONE;

  public PostgresRelayStoreImpl(DataSource dataSource, boolean notifications) {
    this.dataSource = dataSource;
    this.notifications = notifications;
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT current_schema(), (SELECT count(*) FROM postbox_relay_lane)")) {
      rs.next();
      this.schema = rs.getString(1);
      this.laneCount = rs.getInt(2);
    } catch (SQLException e) {
      // only a missing table means the migrations have not run; anything else (the database
      // restarting, refusing connections) must not send the operator to migrate
      throw new OutboxException(
          "42P01".equals(e.getSQLState())
              ? "postbox_relay_lane is missing in the current schema; run"
                  + " PostboxMigrations.migrate first"
              : "cannot read postbox_relay_lane: " + e.getMessage(),
          e);
    }
    if (laneCount != Lanes.COUNT) {
      throw new IllegalStateException(
          "postbox_relay_lane holds " + laneCount + " lanes; this version needs " + Lanes.COUNT);
    }
  }

  @Override
  public int laneCount() {
    return laneCount;
  }

  @Override
  public int heartbeat(String instanceId, Duration ttl) {
    return inTransaction(
        "relay heartbeat failed",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(HEARTBEAT)) {
            ps.setString(1, instanceId);
            ps.setBoolean(2, idleMarks.getOrDefault(instanceId, true));
            ps.executeUpdate();
          }
          try (PreparedStatement ps = c.prepareStatement(FORGET_DEAD)) {
            ps.setDouble(1, seconds(ttl));
            ps.executeUpdate();
          }
          try (PreparedStatement ps = c.prepareStatement(COUNT_LIVE)) {
            ps.setDouble(1, seconds(ttl));
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return Math.max(1, rs.getInt(1));
            }
          }
        });
  }

  /** SQL work on a connection; may throw. */
  @FunctionalInterface
  private interface SqlWork<T> {
    T apply(Connection c) throws SQLException;
  }

  /**
   * Runs {@code work} in one transaction of its own; a failure rolls back and says {@code what}.
   */
  private <T> T inTransaction(String what, SqlWork<T> work) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        T result = work.apply(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new OutboxException(what, e);
    }
  }

  @Override
  public List<LaneLease> renewLeases(String instanceId, Duration ttl) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RENEW)) {
      ps.setDouble(1, seconds(ttl));
      ps.setString(2, instanceId);
      return leases(ps.executeQuery());
    } catch (SQLException e) {
      throw new OutboxException("renewing lane leases failed", e);
    }
  }

  @Override
  public List<LaneLease> acquireLeases(String instanceId, int max, Duration ttl) {
    if (max <= 0) {
      return List.of();
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
      ps.setString(1, instanceId);
      ps.setDouble(2, seconds(ttl));
      ps.setInt(3, max);
      return leases(ps.executeQuery());
    } catch (SQLException e) {
      throw new OutboxException("acquiring lane leases failed", e);
    }
  }

  @Override
  public void releaseLeases(String instanceId, Collection<LaneLease> leases) {
    if (leases.isEmpty()) {
      return;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RELEASE)) {
      bindLeases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("releasing lane leases failed", e);
    }
  }

  @Override
  public void unregister(String instanceId) {
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement ps = c.prepareStatement(RELEASE_ALL)) {
        ps.setString(1, instanceId);
        ps.executeUpdate();
      }
      try (PreparedStatement ps = c.prepareStatement(UNREGISTER)) {
        ps.setString(1, instanceId);
        ps.executeUpdate();
      }
      idleMarks.remove(instanceId);
    } catch (SQLException e) {
      throw new OutboxException("unregistering relay " + instanceId + " failed", e);
    } finally {
      closeListener();
    }
  }

  @Override
  public List<OutboxRecord> claim(String instanceId, Collection<LaneLease> leases, int limit) {
    return claim(instanceId, leases, limit, java.util.Set.of());
  }

  @Override
  public List<OutboxRecord> claim(
      String instanceId,
      Collection<LaneLease> leases,
      int limit,
      java.util.Set<Long> exceptPositions) {
    if (leases.isEmpty()) {
      return List.of();
    }
    try (Connection c = dataSource.getConnection()) {
      List<Short> valid = new ArrayList<>(leases.size());
      try (PreparedStatement ps = c.prepareStatement(VALID_LANES)) {
        bindLeases(c, ps, 1, leases);
        ps.setString(3, instanceId);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            valid.add(rs.getShort(1));
          }
        }
      }
      if (valid.isEmpty()) {
        return List.of();
      }
      // The batch in flight is still pending: read past it and skip its rows here. (Leaving them
      // out in SQL needs an anti-join, and with the small row estimates of the pending index the
      // planner picks a nested loop over the excluded positions: 250 ms per claim, measured.)
      Holds holds = Holds.read(c);
      try (PreparedStatement ps =
          c.prepareStatement(holds.none() ? CLAIM : Holds.claim(CLAIM_SELECT))) {
        ps.setArray(1, c.createArrayOf("int2", valid.toArray()));
        int i = holds.none() ? 2 : holds.bind(c, ps, 2);
        ps.setInt(i, limit + exceptPositions.size());
        List<OutboxRecord> out = new ArrayList<>();
        java.util.Set<String> unreadableKeys = new java.util.HashSet<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (out.size() < limit && rs.next()) {
            if (exceptPositions.contains(rs.getLong(1))) {
              continue;
            }
            String key = rs.getString("msg_key");
            if (key != null && unreadableKeys.contains(key)) {
              continue; // behind an unreadable row of its key: claimed once that row is resolved
            }
            OutboxRecord r = Rows.readForRelay(rs);
            if (!r.readable() && key != null) {
              unreadableKeys.add(key);
            }
            out.add(r);
          }
        }
        return out;
      }
    } catch (SQLException e) {
      throw new OutboxException("claiming outbox rows failed", e);
    }
  }

  @Override
  public int markPublished(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, boolean delete) {
    return markPublished(instanceId, leases, records, List.of(), delete);
  }

  @Override
  public int markPublished(
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      List<RelayPublisher.PublishOutcome.Acknowledged> acks,
      boolean delete) {
    if (records.isEmpty()) {
      return 0;
    }
    if (!acks.isEmpty() && acks.size() != records.size()) {
      throw new IllegalArgumentException(
          acks.size() + " acknowledgements for " + records.size() + " rows");
    }
    // Without waiting for the WAL flush: a mark lost in a PostgreSQL crash only leaves its rows
    // pending, and they are published again (duplicates with the same ids, as after a relay crash
    // between acknowledgement and mark); a lost mark can never lose a message. (PostgreSQL loses
    // a suffix of asynchronously committed transactions, so the rows come back in position order.)
    return inTransaction(
        "marking " + records.size() + " outbox rows published failed",
        c -> {
          try (Statement s = c.createStatement()) {
            s.execute("SET LOCAL synchronous_commit TO off");
          }
          return mark(c, instanceId, leases, records, acks, delete);
        });
  }

  private static int mark(
      Connection c,
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      List<RelayPublisher.PublishOutcome.Acknowledged> acks,
      boolean delete)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(delete ? DELETE_PUBLISHED : MARK_PUBLISHED)) {
      bindLeases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      if (delete) {
        ps.setArray(4, positions(c, records));
      } else {
        Integer[] partitions = new Integer[records.size()];
        Long[] offsets = new Long[records.size()];
        for (int i = 0; i < partitions.length; i++) {
          partitions[i] = acks.isEmpty() ? -1 : acks.get(i).partition();
          offsets[i] = acks.isEmpty() ? -1L : acks.get(i).offset();
        }
        ps.setArray(4, positions(c, records));
        ps.setArray(5, c.createArrayOf("int4", partitions));
        ps.setArray(6, c.createArrayOf("int8", offsets));
      }
      return ps.executeUpdate();
    }
  }

  @Override
  public int markFailed(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String error) {
    if (records.isEmpty()) {
      return 0;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(MARK_FAILED)) {
      bindLeases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      ps.setString(4, error);
      ps.setArray(5, positions(c, records));
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("marking " + records.size() + " outbox rows failed failed", e);
    }
  }

  @Override
  public int markUnpublishable(
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      String error,
      Hold hold) {
    if (hold == Hold.NONE) {
      return markFailed(instanceId, leases, records, error);
    }
    if (records.isEmpty()) {
      return 0;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(MARK_HOLDING)) {
      bindLeases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      ps.setString(4, error);
      ps.setString(5, hold.name());
      ps.setArray(6, positions(c, records));
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException(
          "marking " + records.size() + " outbox rows unpublishable failed", e);
    }
  }

  @Override
  public int purgePublished(Collection<LaneLease> leases, Duration retention, int limit) {
    if (leases.isEmpty()) {
      return 0;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(PURGE)) {
      ps.setArray(1, c.createArrayOf("int2", leases.stream().map(l -> (short) l.lane()).toArray()));
      ps.setDouble(2, seconds(retention));
      ps.setInt(3, limit);
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("purging published outbox rows failed", e);
    }
  }

  @Override
  public Optional<Backlog> backlog() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(BACKLOG);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      long pending = rs.getLong(1);
      double age = rs.getDouble(2); // null (no pending row) reads as 0
      return Optional.of(
          new Backlog(pending, Duration.ofNanos((long) (Math.max(0, age) * 1_000_000_000L))));
    } catch (SQLException e) {
      throw new OutboxException("reading the outbox backlog failed", e);
    }
  }

  @Override
  public void markIdle(String instanceId, boolean idle) {
    // before the statement: a heartbeat that re-inserts a forgotten row meanwhile uses it too
    idleMarks.put(instanceId, idle);
    inTransaction(
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
        });
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
      closeListener();
    } finally {
      listenLock.unlock();
    }
  }

  @Override
  public boolean awaitWork(Duration timeout) throws InterruptedException {
    if (!notifications) {
      Thread.sleep(timeout);
      return false;
    }
    listenLock.lock();
    try {
      if (listenConnection == null) {
        openListener();
      }
      if (listenConnection == null) {
        Thread.sleep(timeout); // could not listen: poll
        return false;
      }
      PGConnection pg = listenConnection.unwrap(PGConnection.class);
      long deadline = System.nanoTime() + timeout.toNanos();
      long step = WriterWatch.FIRST_STEP_MILLIS;
      while (!writers.isEmpty()) {
        long left = (deadline - System.nanoTime()) / 1_000_000;
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
      long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
      PGNotification[] got = pg.getNotifications((int) Math.min(Integer.MAX_VALUE, left));
      return got != null && got.length > 0;
    } catch (SQLException e) {
      log.warn("LISTEN connection broke; polling until it is reopened", e);
      writers = WriterWatch.NONE;
      closeListener();
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

  private void closeListener() {
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

  private static List<LaneLease> leases(ResultSet rs) throws SQLException {
    try (rs) {
      List<LaneLease> out = new ArrayList<>();
      while (rs.next()) {
        out.add(new LaneLease(rs.getShort(1), rs.getLong(2)));
      }
      return out;
    }
  }

  private static void bindLeases(
      Connection c, PreparedStatement ps, int first, Collection<LaneLease> leases)
      throws SQLException {
    Short[] lanes = new Short[leases.size()];
    Long[] epochs = new Long[leases.size()];
    int i = 0;
    for (LaneLease l : leases) {
      lanes[i] = (short) l.lane();
      epochs[i++] = l.epoch();
    }
    ps.setArray(first, c.createArrayOf("int2", lanes));
    ps.setArray(first + 1, c.createArrayOf("int8", epochs));
  }

  private static java.sql.Array positions(Connection c, List<OutboxRecord> records)
      throws SQLException {
    Long[] p = new Long[records.size()];
    for (int i = 0; i < p.length; i++) {
      p[i] = records.get(i).position();
    }
    return c.createArrayOf("int8", p);
  }

  private static double seconds(Duration d) {
    return d.toNanos() / 1e9;
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
