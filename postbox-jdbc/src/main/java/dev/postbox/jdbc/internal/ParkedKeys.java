package dev.postbox.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * What an operator does to a parked key ({@code postbox_parked}), on a caller's transaction: make
 * its head due now (release), or move its head to the dead letters, discarded with a reason, and
 * make the next one due now (skip). Both lock the key's rows first and refuse a key whose head a
 * consumer is retrying at this moment (leased), so an operator never races the drainer.
 */
public final class ParkedKeys {

  private static final String LOCK =
      "SELECT id, leased_until IS NOT NULL AND leased_until > now() FROM postbox_parked"
          + " WHERE consumer = ? AND msg_key = ? ORDER BY id FOR UPDATE";
  private static final String DUE_NOW =
      "UPDATE postbox_parked SET due_at = now(), leased_until = NULL WHERE id = ?";

  /** Error class of a parked message an operator skipped (kept as a discarded dead letter). */
  public static final String SKIPPED_ERROR_CLASS = "postbox.parked.SkippedByOperator";

  // The head, byte-identical, as a DISCARDED dead letter: nothing an operator skips is lost, and
  // its trace shows it. Message id and type come from the record's headers (every transport
  // mapping's CloudEvents id and type), when they are there and well-formed.
  private static final String TO_DEAD_LETTER =
      "INSERT INTO postbox_dead_letter (consumer, topic, partition, \"offset\", message_id, type,"
          + " msg_key, value, header_names, header_values, classification, error_class,"
          + " error_message, fingerprint, attempts, first_failure, last_failure, status,"
          + " discarded_at, discarded_by, discard_reason)"
          + " SELECT p.consumer, p.topic, p.partition, p.\"offset\","
          + " CASE WHEN h.id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"
          + "   THEN h.id::uuid END, h.type, p.key_bytes, p.value, p.header_names,"
          + " p.header_values, 'PERMANENT', '"
          + SKIPPED_ERROR_CLASS
          + "', coalesce(p.last_error, 'skipped while parked'), '"
          + SKIPPED_ERROR_CLASS
          + ":' || p.topic, p.attempts, p.parked_at, clock_timestamp(), 'DISCARDED',"
          + " clock_timestamp(), ?, ?"
          + " FROM postbox_parked p CROSS JOIN LATERAL (SELECT"
          + "   postbox_header_text(p.header_names, p.header_values,"
          + "     ARRAY['ce_id', 'cloudevents_id', 'cloudevents:id']) AS id,"
          + "   postbox_header_text(p.header_names, p.header_values,"
          + "     ARRAY['ce_type', 'cloudevents_type', 'cloudevents:type']) AS type) h"
          + " WHERE p.id = ? RETURNING id, message_id";

  private ParkedKeys() {}

  /** The result of skipping a head: the dead letter it became and its message id, if known. */
  public record Skipped(long deadLetterId, java.util.Optional<java.util.UUID> messageId) {}

  /**
   * Makes the head of the key due now; returns how many messages the key holds.
   *
   * @throws NoSuchElementException if the key is not parked
   * @throws IllegalStateException if a consumer is retrying it right now
   */
  public static int release(Connection c, String consumer, String key) throws SQLException {
    List<Long> ids = lockUnleased(c, consumer, key);
    due(c, ids.get(0));
    return ids.size();
  }

  /**
   * Moves the head of the key to the dead letters (discarded, by {@code by}, with {@code reason})
   * and makes the next parked message, if any, due now.
   *
   * @throws NoSuchElementException if the key is not parked
   * @throws IllegalStateException if a consumer is retrying it right now
   */
  public static Skipped skip(Connection c, String consumer, String key, String by, String reason)
      throws SQLException {
    List<Long> ids = lockUnleased(c, consumer, key);
    Skipped skipped;
    try (PreparedStatement ps = c.prepareStatement(TO_DEAD_LETTER)) {
      ps.setString(1, by);
      ps.setString(2, reason);
      ps.setLong(3, ids.get(0));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        skipped =
            new Skipped(
                rs.getLong(1),
                java.util.Optional.ofNullable(rs.getObject(2, java.util.UUID.class)));
      }
    }
    try (PreparedStatement ps = c.prepareStatement("DELETE FROM postbox_parked WHERE id = ?")) {
      ps.setLong(1, ids.get(0));
      ps.executeUpdate();
    }
    if (ids.size() > 1) {
      due(c, ids.get(1));
    }
    return skipped;
  }

  private static List<Long> lockUnleased(Connection c, String consumer, String key)
      throws SQLException {
    List<Long> ids = new ArrayList<>();
    boolean headLeased = false;
    try (PreparedStatement ps = c.prepareStatement(LOCK)) {
      ps.setString(1, consumer);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (ids.isEmpty()) {
            headLeased = rs.getBoolean(2);
          }
          ids.add(rs.getLong(1));
        }
      }
    }
    if (ids.isEmpty()) {
      throw new NoSuchElementException(
          "key '" + key + "' of consumer '" + consumer + "' is not parked");
    }
    if (headLeased) {
      throw new IllegalStateException(
          "key '"
              + key
              + "' of consumer '"
              + consumer
              + "' is being retried by a consumer right now; try again when its lease ends");
    }
    return ids;
  }

  private static void due(Connection c, long id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(DUE_NOW)) {
      ps.setLong(1, id);
      ps.executeUpdate();
    }
  }
}
