package dev.postbox.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.function.BiFunction;
import javax.sql.DataSource;

/** Start-up check shared by the stores: their tables exist in the data source's current schema. */
final class Tables {

  private Tables() {}

  /**
   * Fails with {@code error} unless every table exists (the migrations have run); asked again on
   * another connection when the session it got had been ended ({@link StartupQuery}).
   */
  static void require(
      DataSource dataSource,
      BiFunction<String, Throwable, RuntimeException> error,
      String... tables) {
    boolean present;
    try {
      present = StartupQuery.run(dataSource, c -> exist(c, tables));
    } catch (SQLException e) {
      // the database's own words (unreachable, no permission, ...), not only that the check failed
      throw error.apply(
          "cannot check " + String.join(", ", tables) + " in the current schema: " + e.getMessage(),
          e);
    }
    if (!present) {
      throw error.apply(
          String.join(" or ", tables)
              + " is missing in the current schema; run PostboxMigrations.migrate first",
          null);
    }
  }

  private static boolean exist(Connection c, String... tables) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT bool_and(to_regclass(t) IS NOT NULL) FROM unnest(?) t")) {
      ps.setArray(1, c.createArrayOf("text", tables));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }
}
