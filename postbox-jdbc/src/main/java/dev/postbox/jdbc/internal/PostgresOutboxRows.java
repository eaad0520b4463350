package dev.postbox.jdbc.internal;

import static dev.postbox.jdbc.internal.RelayBinds.positions;
import static dev.postbox.jdbc.internal.RelayBinds.seconds;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore.Backlog;
import dev.postbox.core.spi.RelayStore.Hold;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The relay's outbox rows on PostgreSQL: claims the pending rows of owned lanes (leaving out rows
 * held behind an unpublishable row), marks them published, failed or holding under the lanes' lease
 * epochs, purges published rows and reads the backlog. Thread-safe (stateless over the data
 * source).
 */
final class PostgresOutboxRows {

  private static final String VALID_LANES =
      "SELECT l.lane FROM postbox_relay_lane l"
          + " JOIN unnest(?::smallint[], ?::bigint[]) AS mine(lane, epoch) ON mine.lane = l.lane"
          + " WHERE l.epoch = mine.epoch AND l.owner = ? AND l.lease_until > now()";
  private static final String CLAIM_SELECT =
      "SELECT position, lane, created_at, attempts, "
          + "message_id, topic, msg_key, type, schema_version, occurred_at, source, correlation_id,"
          + " causation_id, tenant, headers, content_type, payload"
          + " FROM postbox_outbox o"
          + " WHERE "
          + PendingRows.CONDITION
          + " AND lane = ANY(?::smallint[])";
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
      "SELECT (SELECT count(*) FROM postbox_outbox WHERE "
          + PendingRows.CONDITION
          + "),"
          + " (SELECT extract(epoch FROM clock_timestamp() - created_at) FROM postbox_outbox"
          + "   WHERE "
          + PendingRows.CONDITION
          + " ORDER BY position LIMIT 1)";
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

  PostgresOutboxRows(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /**
   * Up to {@code limit} pending rows of the lanes still leased at the given epochs, by position,
   * leaving out {@code exceptPositions}, held rows, and later rows of a key behind an unreadable
   * row.
   */
  List<OutboxRecord> claim(
      String instanceId, Collection<LaneLease> leases, int limit, Set<Long> exceptPositions) {
    if (leases.isEmpty()) {
      return List.of();
    }
    try (Connection c = dataSource.getConnection()) {
      List<Short> valid = validLanes(c, instanceId, leases);
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
        try (ResultSet rs = ps.executeQuery()) {
          return read(rs, limit, exceptPositions);
        }
      }
    } catch (SQLException e) {
      throw new OutboxException("claiming outbox rows failed", e);
    }
  }

  private static List<Short> validLanes(
      Connection c, String instanceId, Collection<LaneLease> leases) throws SQLException {
    List<Short> valid = new ArrayList<>(leases.size());
    try (PreparedStatement ps = c.prepareStatement(VALID_LANES)) {
      RelayBinds.leases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          valid.add(rs.getShort(1));
        }
      }
    }
    return valid;
  }

  private static List<OutboxRecord> read(ResultSet rs, int limit, Set<Long> exceptPositions)
      throws SQLException {
    List<OutboxRecord> out = new ArrayList<>();
    Set<String> unreadableKeys = new HashSet<>();
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
    return out;
  }

  int markPublished(
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
    return Transactions.inTransaction(
        dataSource,
        "marking " + records.size() + " outbox rows published failed",
        c -> {
          try (Statement s = c.createStatement()) {
            s.execute("SET LOCAL synchronous_commit TO off");
          }
          return mark(c, instanceId, leases, records, acks, delete);
        },
        OutboxException::new);
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
      RelayBinds.leases(c, ps, 1, leases);
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

  int markFailed(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String error) {
    if (records.isEmpty()) {
      return 0;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(MARK_FAILED)) {
      RelayBinds.leases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      ps.setString(4, error);
      ps.setArray(5, positions(c, records));
      return ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("marking " + records.size() + " outbox rows failed failed", e);
    }
  }

  int markUnpublishable(
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
      RelayBinds.leases(c, ps, 1, leases);
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

  int purgePublished(Collection<LaneLease> leases, Duration retention, int limit) {
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

  Optional<Backlog> backlog() {
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
}
