package dev.postbox.bench.internal;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** How many connections a PostgreSQL server has open, as {@code max_connections} counts them. */
final class ServerConnections {

  private ServerConnections() {}

  /** Client backends and WAL senders open on the server now (both count against the limit). */
  static int count(DataSource dataSource) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity"
                    + " WHERE backend_type IN ('client backend', 'walsender')")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
