package dev.postbox.demo;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Drops the demo schema's CDC slot and publication once its relays stopped: a slot nobody reads
 * keeps the server's WAL forever. A stopped relay's walsender may hold the slot for a moment, so
 * the drop is retried for a few seconds.
 */
final class CdcCleanup {

  private CdcCleanup() {}

  static void dropSlotAndPublication(DataSource ds, PrintStream out) {
    for (int attempt = 1; attempt <= 50; attempt++) {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        String name;
        try (ResultSet rs = s.executeQuery("SELECT 'postbox_cdc_' || current_schema()")) {
          rs.next();
          name = rs.getString(1);
        }
        s.execute(
            "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots"
                + " WHERE slot_name = '"
                + name.replace("'", "''")
                + "'");
        s.execute("DROP PUBLICATION IF EXISTS \"" + name.replace("\"", "\"\"") + "\"");
        return;
      } catch (SQLException e) {
        if (attempt == 50) {
          out.printf("could not drop the CDC slot (drop it by hand): %s%n", e.getMessage());
          return;
        }
        try {
          Thread.sleep(200);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
