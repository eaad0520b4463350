package dev.postbox.jdbc.cdc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** Test helper: drops a CDC relay's slot and publication (the test kit's server has 10 slots). */
final class CdcSlots {

  private CdcSlots() {}

  static void drop(DataSource ds, String slot, String publication) throws SQLException {
    try (Connection c = ds.getConnection()) {
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                  + " WHERE slot_name = ?")) {
        ps.setString(1, slot);
        ps.execute();
      }
      try (Statement s = c.createStatement()) {
        s.execute("DROP PUBLICATION IF EXISTS " + publication);
      }
    }
  }
}
