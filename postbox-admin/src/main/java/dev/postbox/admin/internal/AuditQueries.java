package dev.postbox.admin.internal;

import dev.postbox.admin.AuditEntry;
import dev.postbox.admin.AuditFilter;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/** The audit log of operator actions, newest first (keyset on id). */
public final class AuditQueries {

  private final DataSource dataSource;

  public AuditQueries(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /**
   * Records that {@code actor} looked at dead letter {@code id}'s payload ({@code REVEAL_PAYLOAD});
   * false if there is no such letter. One statement: the row names the letter's message and
   * consumer.
   */
  public boolean recordReveal(String actor, long id) {
    String sql =
        "INSERT INTO postbox_replay_audit (by_whom, what, how_many, action, dead_letter_id,"
            + " message_id, consumer)"
            + " SELECT ?, 'payload of dead letter ' || id, 0, 'REVEAL_PAYLOAD', id, message_id,"
            + " consumer FROM postbox_dead_letter WHERE id = ?";
    try (java.sql.Connection c = dataSource.getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, actor);
      ps.setLong(2, id);
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      throw new dev.postbox.admin.AdminException(
          "could not record the payload view of dead letter " + id, e);
    }
  }

  public Page<AuditEntry> list(AuditFilter filter, PageRequest page) {
    Statement s =
        new Statement(
                "SELECT id, at, by_whom, action, what, how_many, reason, dead_letter_id, message_id,"
                    + " new_message_id, consumer, msg_key, outbox_position FROM postbox_replay_audit")
            .where("by_whom = ?", filter.actor())
            .where("action = ?", filter.action())
            .where("dead_letter_id = ?", filter.deadLetterId());
    if (filter.messageId().isPresent()) {
      s.where(
          "(message_id = ? OR new_message_id = ?)",
          filter.messageId().get(),
          filter.messageId().get());
    }
    s.where("at >= ?", filter.from()).where("at < ?", filter.to());
    if (page.after().isPresent()) {
      s.where("id < ?", Cursors.decodeLong(page.after().get()));
    }
    s.then(" ORDER BY id DESC LIMIT ?", page.limit() + 1);
    List<AuditEntry> rows = s.list(dataSource, "the audit", AuditQueries::entry);
    return DeadLetterQueries.page(rows, page, e -> Cursors.encodeLong(e.id()));
  }

  private static AuditEntry entry(ResultSet rs) throws SQLException {
    return new AuditEntry(
        rs.getLong("id"),
        Statement.instant(rs, "at"),
        rs.getString("by_whom"),
        rs.getString("action"),
        rs.getString("what"),
        rs.getInt("how_many"),
        Optional.ofNullable(rs.getString("reason")),
        Optional.ofNullable(rs.getObject("dead_letter_id", Long.class)),
        Optional.ofNullable(rs.getObject("message_id", UUID.class)),
        Optional.ofNullable(rs.getObject("new_message_id", UUID.class)),
        Optional.ofNullable(rs.getString("consumer")),
        Optional.ofNullable(rs.getString("msg_key")),
        Optional.ofNullable(rs.getObject("outbox_position", Long.class)));
  }
}
