package dev.postbox.jdbc;

import dev.postbox.core.spi.RelayStore.Hold;
import dev.postbox.jdbc.internal.PendingRows;
import dev.postbox.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What an operator does about outbox rows the relay cannot publish: list the rows that hold their
 * key (or topic), with the reason and what waits behind them, then {@linkplain #retry retry} one
 * after fixing the cause (creating the topic, raising the broker's maximum message size) or
 * {@linkplain #skip skip} it with a reason. Both are recorded in {@code postbox_outbox_resolution},
 * and both keep per-key order: a retried row is published before the rows it held; a skipped row is
 * never published and the rows it held go on.
 *
 * <pre>{@code
 * OutboxOperations ops = OutboxOperations.postgres(dataSource);
 * for (OutboxOperations.HoldingRow row : ops.holding()) {
 *   log.info("{} holds {} rows of {} keys: {}", row.position(), row.heldRows(), row.heldKeys(), row.error());
 * }
 * ops.retry(position, "alice");                        // after: kafka-topics --create --topic ...
 * ops.skip(position, "payload of a test order, obsolete", "alice");
 * }</pre>
 *
 * <p>Rows marked failed without a hold (the relay's {@code SKIP} policy, or before migration 9)
 * were already overtaken by the later rows of their key: they are not listed here and can only be
 * republished out of order, by hand. Defaults: the data source's current schema. Thread-safe.
 */
public final class OutboxOperations {

  private static final String HOLDING =
      "SELECT h.position, h.message_id, h.topic, h.msg_key, h.lane, h.hold, h.failed_at,"
          + " h.attempts, h.last_error, c.held_rows, c.held_keys"
          + " FROM postbox_outbox h CROSS JOIN LATERAL ("
          + "   SELECT count(*) AS held_rows, count(DISTINCT o.msg_key) AS held_keys"
          + "   FROM postbox_outbox o WHERE "
          + PendingRows.condition("o")
          + "   AND ((h.hold = 'TOPIC' AND o.topic = h.topic)"
          + "     OR (o.msg_key = h.msg_key AND o.position > h.position))) c"
          + " WHERE h.hold IS NOT NULL ORDER BY h.position";
  // One statement each: the row's change and its audit record commit together, or neither.
  private static final String RETRY =
      "WITH r AS (UPDATE postbox_outbox SET failed_at = NULL, hold = NULL"
          + "   WHERE position = ? AND hold IS NOT NULL"
          + "   RETURNING position, message_id, topic, msg_key, last_error)"
          + " INSERT INTO postbox_outbox_resolution"
          + " (position, message_id, topic, msg_key, action, error, reason, resolved_by)"
          + " SELECT position, message_id, topic, msg_key, 'RETRIED', last_error, ?, ? FROM r"
          + " RETURNING message_id, msg_key";
  private static final String SKIP =
      "WITH r AS (UPDATE postbox_outbox SET hold = NULL WHERE position = ? AND hold IS NOT NULL"
          + "   RETURNING position, message_id, topic, msg_key, last_error)"
          + " INSERT INTO postbox_outbox_resolution"
          + " (position, message_id, topic, msg_key, action, error, reason, resolved_by)"
          + " SELECT position, message_id, topic, msg_key, 'SKIPPED', last_error, ?, ? FROM r"
          + " RETURNING message_id, msg_key";
  // Idle relays wait for a notification (or their poll interval): the released rows are work.
  private static final String WAKE = "SELECT pg_notify('postbox_outbox', current_schema())";

  /**
   * An unpublishable row that holds others back.
   *
   * @param position the row's position (what {@link #retry} and {@link #skip} take)
   * @param messageId its message id
   * @param topic its topic
   * @param key its key, if any
   * @param lane its relay lane
   * @param hold {@link Hold#KEY}: the later rows of its key wait; {@link Hold#TOPIC}: also every
   *     row of its topic
   * @param failedAt when the relay gave up on it
   * @param attempts failed publish attempts
   * @param error why it cannot be published
   * @param heldRows pending rows waiting behind it
   * @param heldKeys distinct keys among them (rows without a key not counted)
   */
  public record HoldingRow(
      long position,
      UUID messageId,
      String topic,
      Optional<String> key,
      int lane,
      Hold hold,
      Instant failedAt,
      int attempts,
      String error,
      long heldRows,
      long heldKeys) {}

  private final DataSource dataSource;

  private OutboxOperations(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** Operations on the outbox in {@code dataSource}'s current schema. */
  public static OutboxOperations postgres(DataSource dataSource) {
    return new OutboxOperations(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /**
   * The rows that hold their key or topic, in position order, each with what waits behind it.
   *
   * @throws OutboxException if the database fails
   */
  public List<HoldingRow> holding() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(HOLDING);
        ResultSet rs = ps.executeQuery()) {
      List<HoldingRow> out = new ArrayList<>();
      while (rs.next()) {
        out.add(
            new HoldingRow(
                rs.getLong(1),
                rs.getObject(2, UUID.class),
                rs.getString(3),
                Optional.ofNullable(rs.getString(4)),
                rs.getShort(5),
                Hold.valueOf(rs.getString(6)),
                rs.getTimestamp(7).toInstant(),
                rs.getInt(8),
                rs.getString(9),
                rs.getLong(10),
                rs.getLong(11)));
      }
      return out;
    } catch (SQLException e) {
      throw new OutboxException("reading the holding outbox rows failed", e);
    }
  }

  /**
   * Makes the holding row at {@code position} pending again, so the relay publishes it first and
   * then the rows it held, in order (if it fails again, it holds again). Recorded with {@code by}.
   *
   * @return false when no row at {@code position} holds (never did, already resolved, or purged)
   * @throws OutboxException if the database fails
   */
  public boolean retry(long position, String by) {
    return resolve(RETRY, position, null, requireText(by, "by"), "retrying");
  }

  /**
   * Leaves the holding row at {@code position} unpublished for good (it stays failed, with its
   * error) and lets the rows it held go on. Recorded with {@code reason} and {@code by}.
   *
   * @return false when no row at {@code position} holds (never did, already resolved, or purged)
   * @throws OutboxException if the database fails
   */
  public boolean skip(long position, String reason, String by) {
    return resolve(
        SKIP, position, requireText(reason, "reason"), requireText(by, "by"), "skipping");
  }

  private boolean resolve(String sql, long position, String reason, String by, String what) {
    return Transactions.inTransaction(
            dataSource,
            what + " outbox row " + position + " failed",
            c -> resolve(c, sql, position, reason, by),
            OutboxException::new)
        .isPresent();
  }

  /** The row an operator retried or skipped: its message id and key. */
  record Resolved(UUID messageId, Optional<String> key) {}

  /**
   * Retries ({@code retry}) or skips the holding row at {@code position} on {@code c}, in the
   * caller's transaction (the {@link Replayer} audits it in the same one); empty if no row there
   * holds.
   */
  static Optional<Resolved> resolve(
      Connection c, boolean retry, long position, String reason, String by) throws SQLException {
    return resolve(c, retry ? RETRY : SKIP, position, reason, by);
  }

  private static Optional<Resolved> resolve(
      Connection c, String sql, long position, String reason, String by) throws SQLException {
    Optional<Resolved> resolved = Optional.empty();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setLong(1, position);
      ps.setString(2, reason);
      ps.setString(3, by);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          resolved =
              Optional.of(
                  new Resolved(rs.getObject(1, UUID.class), Optional.ofNullable(rs.getString(2))));
        }
      }
    }
    if (resolved.isPresent()) {
      try (PreparedStatement ps = c.prepareStatement(WAKE)) {
        ps.execute();
      }
    }
    return resolved;
  }

  private static String requireText(String value, String name) {
    Objects.requireNonNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
    return value;
  }
}
