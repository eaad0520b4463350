package dev.postbox.jdbc.internal;

import dev.postbox.core.spi.OutboxRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads pending outbox rows in position order, a page at a time, as the relay reads them (an
 * unreadable row comes back unreadable, never as an exception): the CDC relay's republication of
 * the table after a lost slot.
 */
public final class PendingRowReader {

  private static final String PAGE =
      "SELECT position, lane, created_at, attempts, "
          + Rows.COLUMNS
          + " FROM postbox_outbox WHERE "
          + PendingRows.CONDITION
          + " AND position > ? ORDER BY position LIMIT ?";

  private PendingRowReader() {}

  /** At most {@code limit} pending rows after {@code afterPosition}, by position. */
  public static List<OutboxRecord> page(Connection c, long afterPosition, int limit)
      throws SQLException {
    List<OutboxRecord> rows = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(PAGE)) {
      ps.setLong(1, afterPosition);
      ps.setInt(2, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(Rows.readForRelay(rs));
        }
      }
    }
    return rows;
  }
}
