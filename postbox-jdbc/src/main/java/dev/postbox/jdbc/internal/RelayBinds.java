package dev.postbox.jdbc.internal;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/** How the relay store's statements take and return leases, positions and durations. */
final class RelayBinds {

  private RelayBinds() {}

  /** Binds the leases as two arrays (lanes, epochs) at {@code first} and {@code first + 1}. */
  static void leases(Connection c, PreparedStatement ps, int first, Collection<LaneLease> leases)
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

  /** The leases a statement returned as (lane, epoch) rows; closes the result set. */
  static List<LaneLease> leases(ResultSet rs) throws SQLException {
    try (rs) {
      List<LaneLease> out = new ArrayList<>();
      while (rs.next()) {
        out.add(new LaneLease(rs.getShort(1), rs.getLong(2)));
      }
      return out;
    }
  }

  /** The records' positions as an {@code int8} array. */
  static Array positions(Connection c, List<OutboxRecord> records) throws SQLException {
    Long[] p = new Long[records.size()];
    for (int i = 0; i < p.length; i++) {
      p[i] = records.get(i).position();
    }
    return c.createArrayOf("int8", p);
  }

  /** A duration in (fractional) seconds, for {@code make_interval(secs => ?)}. */
  static double seconds(Duration d) {
    return d.toNanos() / 1e9;
  }
}
