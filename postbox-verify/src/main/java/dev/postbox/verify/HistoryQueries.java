package dev.postbox.verify;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The SQL the {@link HistoryChecker} asks of the recorded history ({@code verify_business}, {@code
 * verify_effect}, {@code verify_assignment}, {@code verify_parking}): zombie applies, duplicate
 * effects, per-key order, each message's phase.
 */
final class HistoryQueries {

  private HistoryQueries() {}

  /**
   * Effects of {@code phase} applied by a process on a partition after another process had been
   * assigned that partition in a later generation than this process's own latest assignment of it
   * (recorded before the effect committed), unless the record was parked. Generations, not clock
   * times, order assignments: a process resumed from a pause may record a stale generation's
   * assignment after the newer one.
   */
  static String zombieSql(int phase) {
    return "SELECT count(*) FROM verify_effect e JOIN verify_business b ON b.message_id ="
        + " e.message_id WHERE b.phase = "
        + phase
        // a record applied from the parking is applied by whichever consumer leased its key (the
        // parking's lease and the inbox guard it, not the partition's ownership)
        + " AND NOT EXISTS (SELECT 1 FROM verify_parking k WHERE k.part = e.part AND k.off ="
        + " e.off)"
        + " AND EXISTS (SELECT 1 FROM verify_assignment o WHERE o.part = e.part AND o.instance <>"
        + " e.instance AND o.assigned_at < pg_xact_commit_timestamp(e.xmin) AND o.generation >"
        + " (SELECT max(a.generation) FROM verify_assignment a WHERE a.part = e.part AND"
        + " a.instance = e.instance AND a.assigned_at <= pg_xact_commit_timestamp(e.xmin)))";
  }

  /** Effects of {@code phase} beyond the first per {@code groupBy} (message id, or position). */
  static String duplicateEffectsSql(int phase, String groupBy) {
    return "SELECT coalesce(sum(n - 1), 0) FROM (SELECT "
        + groupBy
        + ", count(*) AS n FROM verify_effect e JOIN verify_business b ON b.message_id ="
        + " e.message_id WHERE b.phase = "
        + phase
        + " GROUP BY "
        + groupBy
        + ") x";
  }

  /**
   * Per key, effects in the order they committed must carry increasing sequence numbers (the commit
   * order of the business transactions); counts effects of {@code phase} that came after a later
   * one of their key. With {@code firstEffectsOnly} only each message's first effect is judged: the
   * offsets mode applies a copy the relay published again (same id, another offset) again by
   * design, so a stale copy's second effect is that measured duplicate, not an order violation
   * ({@link #reappliedOutOfOrder} counts those).
   */
  static long orderViolations(Connection c, int phase, boolean firstEffectsOnly)
      throws SQLException {
    return orderViolations(c, phase, firstEffectsOnly, java.util.Set.of());
  }

  /**
   * As {@link #orderViolations(Connection, int, boolean)}, not judging the effects of {@code
   * reappliedAfterLoss}: messages whose first effect PostgreSQL lost after acknowledging it (an
   * asynchronous standby promoted), so that what the database holds is a later application of a
   * copy, in the place the copy came; those losses are counted as PostgreSQL's.
   */
  static long orderViolations(
      Connection c, int phase, boolean firstEffectsOnly, java.util.Set<UUID> reappliedAfterLoss)
      throws SQLException {
    return outOfOrder(c, phase, firstEffectsOnly ? "rn = 1" : "true", reappliedAfterLoss);
  }

  /** How many effects each message has in the database (messages without one are absent). */
  static Map<UUID, Integer> effectCounts(Connection c) throws SQLException {
    Map<UUID, Integer> m = new HashMap<>();
    try (PreparedStatement ps =
            c.prepareStatement("SELECT message_id, count(*) FROM verify_effect GROUP BY 1");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        m.put(rs.getObject(1, UUID.class), rs.getInt(2));
      }
    }
    return m;
  }

  /** Second and later effects of a message (republished copies) that came after a later one. */
  static long reappliedOutOfOrder(Connection c, int phase) throws SQLException {
    return outOfOrder(c, phase, "true", java.util.Set.of())
        - outOfOrder(c, phase, "rn = 1", java.util.Set.of());
  }

  private static long outOfOrder(Connection c, int phase, String which, java.util.Set<UUID> skipped)
      throws SQLException {
    long violations = 0;
    try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT key, seq, phase, rn, message_id FROM (SELECT e.key, e.seq, b.phase, e.id,"
                    + " e.message_id,"
                    + " pg_xact_commit_timestamp(e.xmin) AS committed, row_number() OVER"
                    + " (PARTITION BY e.message_id ORDER BY pg_xact_commit_timestamp(e.xmin),"
                    + " e.id) AS rn FROM verify_effect e LEFT JOIN verify_business b ON"
                    + " b.message_id = e.message_id) x WHERE "
                    + which
                    + " ORDER BY key, committed, id");
        ResultSet rs = ps.executeQuery()) {
      String key = null;
      long max = 0;
      while (rs.next()) {
        String k = rs.getString(1);
        long seq = rs.getLong(2);
        int p = rs.getInt(3);
        if (rs.wasNull()) {
          continue; // not a committed business transaction: counted as rolled back, applied
        }
        if (skipped.contains(rs.getObject(5, UUID.class))) {
          continue; // its first effect PostgreSQL lost: a re-applied copy, counted as that loss
        }
        if (!k.equals(key)) {
          key = k;
          max = 0;
        }
        if (seq < max && p == phase) {
          violations++;
        }
        max = Math.max(max, seq);
      }
    }
    return violations;
  }

  static Map<UUID, Integer> phases(Connection c) throws SQLException {
    Map<UUID, Integer> m = new HashMap<>();
    try (PreparedStatement ps =
            c.prepareStatement("SELECT message_id, phase FROM verify_business");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        m.put(rs.getObject(1, UUID.class), rs.getInt(2));
      }
    }
    return m;
  }

  /**
   * The message ids of the business transactions matching {@code where} (on {@code b}) with neither
   * an effect nor a dead letter.
   */
  static java.util.List<UUID> unfinished(Connection c, String where) throws SQLException {
    java.util.List<UUID> ids = new java.util.ArrayList<>();
    try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT b.message_id FROM verify_business b WHERE "
                    + where
                    + " AND NOT EXISTS (SELECT 1 FROM verify_effect e WHERE e.message_id ="
                    + " b.message_id) AND NOT EXISTS (SELECT 1 FROM postbox_dead_letter d WHERE"
                    + " d.message_id = b.message_id)");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  /** The message ids of the effects whose message has no business row (any phase). */
  static java.util.List<UUID> effectsWithoutBusiness(Connection c) throws SQLException {
    java.util.List<UUID> ids = new java.util.ArrayList<>();
    try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT e.message_id FROM verify_effect e WHERE NOT EXISTS (SELECT 1 FROM"
                    + " verify_business b WHERE b.message_id = e.message_id)");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  static long count(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
