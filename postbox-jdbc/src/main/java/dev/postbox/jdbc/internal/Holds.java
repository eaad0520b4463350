package dev.postbox.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The unpublishable rows that hold their key or topic (migration V9), as a claim needs them: topics
 * held whole, and (key, position) pairs whose later rows wait.
 */
record Holds(List<String> topics, List<String> keys, List<Long> keyPositions) {

  /** Holding rows read per statement; more are read page by page. */
  static final int PAGE = 500;

  // Few rows, read from the partial index postbox_outbox_holding before each claim, so that a claim
  // without any holds (the normal case) is the plain one. The ORDER BY position LIMIT is what keeps
  // it on that index: before the outbox's first ANALYZE (a new table, or a burst of inserts the
  // statistics have not seen) the planner takes "hold IS NOT NULL" for most rows and reads the
  // whole table instead (measured on 100,000 pending rows: 20 ms per claim against 0.05 ms; it cost
  // the relay a quarter of its throughput). An ordered scan with a limit is cheapest on the index
  // whatever the estimate, so the plan no longer depends on the statistics.
  static final String READ =
      "SELECT msg_key, position, topic, hold FROM postbox_outbox"
          + " WHERE hold IS NOT NULL AND position > ? ORDER BY position LIMIT "
          + PAGE;

  /** Whether nothing holds. */
  boolean none() {
    return topics.isEmpty() && keys.isEmpty();
  }

  /**
   * The claim {@code select} (which ends in its WHERE clause, with the outbox as {@code o}) leaving
   * out every row of a held topic and the later rows of a held key; the holds go in as small arrays
   * ({@link #bind}), so the scan of the pending index still finds the rows of other keys behind
   * them. Then {@code ORDER BY position LIMIT ?}.
   */
  static String claim(String select) {
    return select
        + " AND o.topic <> ALL(?::text[])"
        + " AND NOT EXISTS (SELECT 1 FROM unnest(?::text[], ?::bigint[]) AS h(k, p)"
        + "   WHERE h.k = o.msg_key AND h.p < o.position)"
        + " ORDER BY position LIMIT ?";
  }

  /** Binds the three arrays of {@link #claim} from parameter {@code first}; returns the next. */
  int bind(Connection c, PreparedStatement ps, int first) throws SQLException {
    ps.setArray(first, c.createArrayOf("text", topics.toArray()));
    ps.setArray(first + 1, c.createArrayOf("text", keys.toArray()));
    ps.setArray(first + 2, c.createArrayOf("int8", keyPositions.toArray()));
    return first + 3;
  }

  static Holds read(Connection c) throws SQLException {
    List<String> topics = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    List<Long> positions = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(READ)) {
      long after = Long.MIN_VALUE;
      int read = PAGE;
      while (read == PAGE) {
        ps.setLong(1, after);
        read = 0;
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            read++;
            after = rs.getLong(2);
            String key = rs.getString(1);
            if (key != null) {
              keys.add(key);
              positions.add(after);
            }
            if ("TOPIC".equals(rs.getString(4))) {
              topics.add(rs.getString(3));
            }
          }
        }
      }
    }
    return new Holds(topics, keys, positions);
  }
}
