package dev.postbox.jdbc;

import dev.postbox.jdbc.MessageTrace.Step;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Traces a message by id through the Postbox tables, read-only: its outbox row, its dead letters,
 * parked copies and replays, and each consumer's inbox record.
 *
 * <pre>{@code
 * MessageTrace trace = MessageTracer.postgres(dataSource).trace(messageId);
 * trace.steps().forEach(s -> System.out.println(s.at() + " " + s.step() + " " + s.detail()));
 * }</pre>
 *
 * <p>What is recorded where: the outbox row (written, and published with topic, partition and
 * offset since migration 6, or failed for good; since migration 9 also whether it holds the later
 * rows of its key or waits behind such a row, and each operator retry or skip; retention deletes
 * published rows after an hour by default, and a replay writes the row anew, so the row shows the
 * latest publication); dead letters (where the consumer read the record, first and last failure,
 * attempts, classification, error, replay or discard); parked messages (found by their {@code
 * ce_id} header; attempts, next due time, last error); inbox records of {@code EFFECTIVELY_ONCE}
 * consumers (processed at, the start of the effect's transaction; purged after the inbox
 * retention). Consumers without an inbox, and in-place retries of a message that then succeeded,
 * leave no per-message record: those are counted in metrics only, and the trace says so in its
 * notes.
 *
 * <p>Defaults: the data source's current schema. Thread-safe.
 */
public final class MessageTracer {

  private final DataSource dataSource;
  private final String prefix;

  private MessageTracer(DataSource dataSource, String prefix) {
    this.dataSource = dataSource;
    this.prefix = prefix;
  }

  /** A tracer of the Postbox tables in {@code dataSource}'s current schema. */
  public static MessageTracer postgres(DataSource dataSource) {
    return new MessageTracer(Objects.requireNonNull(dataSource, "dataSource"), "");
  }

  /** A tracer of the Postbox tables in {@code schema}. */
  public static MessageTracer postgres(DataSource dataSource, String schema) {
    Objects.requireNonNull(schema, "schema");
    if (schema.isBlank()) {
      throw new IllegalArgumentException("schema must not be blank");
    }
    return new MessageTracer(
        Objects.requireNonNull(dataSource, "dataSource"),
        "\"" + schema.replace("\"", "\"\"") + "\".");
  }

  /**
   * The trace of message {@code id}; with no steps when no table knows it.
   *
   * @throws OutboxException if the database fails
   */
  public MessageTrace trace(UUID id) {
    Objects.requireNonNull(id, "id");
    List<Ranked> steps = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      c.setReadOnly(true);
      outbox(c, id, steps, notes);
      resolutions(c, id, steps);
      deadLetters(c, id, steps);
      parked(c, id, steps);
      inbox(c, id, steps);
    } catch (SQLException e) {
      throw new OutboxException("tracing message " + id + " failed", e);
    }
    steps.sort(Comparator.comparing((Ranked r) -> sortAt(r, steps)).thenComparingInt(r -> r.rank));
    if (!steps.isEmpty()) {
      notes.add(
          "in-place retries of a message that then succeeded, and consumers without an inbox,"
              + " leave no per-message record (see the postbox_consumer_retried and"
              + " postbox_consumer_processed metrics)");
    }
    return new MessageTrace(id, steps.stream().map(r -> r.step).toList(), notes);
  }

  /** A step and its place among steps at the same instant (the order things happen). */
  private record Ranked(Step step, int rank) {}

  /**
   * When a step sorts. {@code published_at} is when the relay marked the row, after the broker's
   * acknowledgement, and a fast consumer may commit its effect (inbox {@code processed_at}) before
   * that mark: such an effect sorts right after the publication it must have come from.
   */
  private static Instant sortAt(Ranked r, List<Ranked> all) {
    Instant at = r.step.at();
    if (!r.step.step().equals("processed")) {
      return at;
    }
    Instant written = null;
    Instant published = null;
    for (Ranked o : all) {
      switch (o.step.step()) {
        case "written" -> written = o.step.at();
        case "published" -> published = o.step.at();
        default -> {}
      }
    }
    if (written != null && published != null && !at.isBefore(written) && at.isBefore(published)) {
      return published;
    }
    return at;
  }

  private void outbox(Connection c, UUID id, List<Ranked> steps, List<String> notes)
      throws SQLException {
    String sql =
        "SELECT topic, msg_key, type, schema_version, occurred_at, correlation_id, lane,"
            + " created_at, published_at, published_partition, published_offset, failed_at,"
            + " attempts, last_error, headers->>'traceparent', now(), hold, position"
            + " FROM "
            + prefix
            + "postbox_outbox WHERE message_id = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          notes.add("no outbox row: not written here, or deleted by retention after publication");
          return;
        }
        String topic = rs.getString(1);
        Map<String, String> a = new LinkedHashMap<>();
        a.put("topic", topic);
        put(a, "key", rs.getString(2));
        a.put("type", rs.getString(3));
        a.put("schema_version", Integer.toString(rs.getInt(4)));
        put(a, "correlation_id", rs.getString(6));
        a.put("lane", Integer.toString(rs.getInt(7)));
        put(a, "traceparent", rs.getString(15));
        steps.add(
            new Ranked(
                new Step(
                    instant(rs, 5),
                    "occurred",
                    "producer",
                    rs.getString(3) + " v" + rs.getInt(4) + " occurred",
                    Map.of("type", rs.getString(3))),
                0));
        steps.add(
            new Ranked(
                new Step(
                    instant(rs, 8),
                    "written",
                    "outbox",
                    "written to the outbox for topic " + topic + " (lane " + rs.getInt(7) + ")",
                    a),
                1));
        Timestamp published = rs.getTimestamp(9);
        int attempts = rs.getInt(13);
        if (published != null) {
          Map<String, String> p = new LinkedHashMap<>();
          p.put("topic", topic);
          Object partition = rs.getObject(10);
          Object offset = rs.getObject(11);
          put(p, "partition", partition == null ? null : partition.toString());
          put(p, "offset", offset == null ? null : offset.toString());
          p.put("failed_attempts_before", Integer.toString(attempts));
          steps.add(
              new Ranked(
                  new Step(
                      published.toInstant(),
                      "published",
                      "relay",
                      partition == null
                          ? "published to " + topic + " (position not recorded)"
                          : "published to " + topic + "-" + partition + "@" + offset,
                      p),
                  2));
        } else if (rs.getTimestamp(12) != null && rs.getString(17) != null) {
          String key = rs.getString(2);
          String holds =
              "the later rows of "
                  + (key == null ? "no key" : "key '" + key + "'")
                  + ("TOPIC".equals(rs.getString(17)) ? " and every row of topic " + topic : "");
          steps.add(
              new Ranked(
                  new Step(
                      instant(rs, 12),
                      "publish-held",
                      "relay",
                      "the relay cannot publish it: "
                          + rs.getString(14)
                          + "; it holds "
                          + holds
                          + " until an operator retries or skips position "
                          + rs.getLong(18)
                          + " (OutboxOperations)",
                      attrs(
                          "attempts",
                          Integer.toString(attempts),
                          "error",
                          rs.getString(14),
                          "hold",
                          rs.getString(17),
                          "position",
                          Long.toString(rs.getLong(18)))),
                  2));
        } else if (rs.getTimestamp(12) != null) {
          steps.add(
              new Ranked(
                  new Step(
                      instant(rs, 12),
                      "publish-failed",
                      "relay",
                      "the relay gave up publishing it: " + rs.getString(14),
                      attrs("attempts", Integer.toString(attempts), "error", rs.getString(14))),
                  2));
        } else {
          String behind = heldBehind(c, topic, rs.getString(2), rs.getLong(18));
          steps.add(
              new Ranked(
                  new Step(
                      instant(rs, 16),
                      "pending",
                      "relay",
                      "not published yet ("
                          + attempts
                          + " failed attempts)"
                          + (behind == null ? "" : "; " + behind),
                      attrs("attempts", Integer.toString(attempts), "held_behind", behind)),
                  2));
        }
      }
    }
  }

  /** What holds a pending row back: the first unpublishable row of its key or topic, or null. */
  private String heldBehind(Connection c, String topic, String key, long position)
      throws SQLException {
    String sql =
        "SELECT position, message_id, last_error FROM "
            + prefix
            + "postbox_outbox WHERE hold IS NOT NULL AND ((hold = 'TOPIC' AND topic = ?)"
            + " OR (msg_key = ? AND position < ?)) ORDER BY position LIMIT 1";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, topic);
      ps.setString(2, key);
      ps.setLong(3, position);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? "waits behind the unpublishable row at position "
                + rs.getLong(1)
                + " (message "
                + rs.getObject(2)
                + "): "
                + rs.getString(3)
            : null;
      }
    }
  }

  private void resolutions(Connection c, UUID id, List<Ranked> steps) throws SQLException {
    String sql =
        "SELECT action, error, reason, resolved_by, resolved_at, position FROM "
            + prefix
            + "postbox_outbox_resolution WHERE message_id = ? ORDER BY id";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          boolean retried = rs.getString(1).equals("RETRIED");
          steps.add(
              new Ranked(
                  new Step(
                      instant(rs, 5),
                      retried ? "publish-retried" : "publish-skipped",
                      rs.getString(4),
                      (retried
                              ? "unpublishable row retried by "
                              : "unpublishable row skipped (never published) by ")
                          + rs.getString(4)
                          + (rs.getString(3) == null ? "" : ": " + rs.getString(3))
                          + "; it had failed with: "
                          + rs.getString(2),
                      attrs(
                          "position",
                          Long.toString(rs.getLong(6)),
                          "by",
                          rs.getString(4),
                          "reason",
                          rs.getString(3),
                          "error",
                          rs.getString(2))),
                  2));
        }
      }
    }
  }

  private void deadLetters(Connection c, UUID id, List<Ranked> steps) throws SQLException {
    String sql =
        "SELECT id, consumer, topic, partition, \"offset\", classification, error_class,"
            + " error_message, attempts, first_failure, last_failure, status, replays, created_at,"
            + " replayed_at, replayed_by, discarded_at, discarded_by, discard_reason"
            + " FROM "
            + prefix
            + "postbox_dead_letter WHERE message_id = ? ORDER BY id";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          deadLetterSteps(rs, steps);
        }
      }
    }
  }

  /** The steps of one dead letter row: its first failure, dead-lettering, replay and discard. */
  private static void deadLetterSteps(ResultSet rs, List<Ranked> steps) throws SQLException {
    String consumer = rs.getString(2);
    String where = rs.getString(3) + "-" + rs.getInt(4) + "@" + rs.getLong(5);
    String error = rs.getString(7) + ": " + rs.getString(8);
    Map<String, String> a =
        attrs(
            "dead_letter_id", Long.toString(rs.getLong(1)),
            "topic", rs.getString(3),
            "partition", Integer.toString(rs.getInt(4)),
            "offset", Long.toString(rs.getLong(5)));
    steps.add(
        new Ranked(
            new Step(
                instant(rs, 10),
                "failed",
                consumer,
                "first failure reading " + where + ": " + error,
                a),
            3));
    Map<String, String> d = new LinkedHashMap<>(a);
    d.put("classification", rs.getString(6));
    d.put("attempts", Integer.toString(rs.getInt(9)));
    d.put("error", error);
    d.put("last_failure", instant(rs, 11).toString());
    d.put("status", rs.getString(12));
    d.put("replays", Integer.toString(rs.getInt(13)));
    steps.add(
        new Ranked(
            new Step(
                instant(rs, 14),
                "dead-lettered",
                consumer,
                rs.getString(6)
                    + " after "
                    + rs.getInt(9)
                    + " attempt(s): "
                    + error
                    + " (dead letter "
                    + rs.getLong(1)
                    + ", "
                    + rs.getString(12)
                    + ")",
                d),
            5));
    if (rs.getTimestamp(15) != null) {
      steps.add(
          new Ranked(
              new Step(
                  instant(rs, 15),
                  "replayed",
                  consumer,
                  "dead letter " + rs.getLong(1) + " replayed by " + rs.getString(16),
                  attrs("dead_letter_id", Long.toString(rs.getLong(1)), "by", rs.getString(16))),
              6));
    }
    if (rs.getTimestamp(17) != null) {
      steps.add(
          new Ranked(
              new Step(
                  instant(rs, 17),
                  "discarded",
                  consumer,
                  "dead letter "
                      + rs.getLong(1)
                      + " discarded by "
                      + rs.getString(18)
                      + ": "
                      + rs.getString(19),
                  attrs(
                      "dead_letter_id",
                      Long.toString(rs.getLong(1)),
                      "by",
                      rs.getString(18),
                      "reason",
                      rs.getString(19))),
              6));
    }
  }

  private void parked(Connection c, UUID id, List<Ranked> steps) throws SQLException {
    // Parked rows keep the record as read; the message id is its ce_id header. The table holds only
    // failing keys, so reading it whole is cheap.
    String sql =
        "SELECT consumer, msg_key, topic, partition, \"offset\", attempts, due_at, last_error,"
            + " parked_at FROM "
            + prefix
            + "postbox_parked WHERE header_values[array_position(header_names, 'ce_id')] = ?";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setBytes(1, id.toString().getBytes(StandardCharsets.UTF_8));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String where = rs.getString(3) + "-" + rs.getInt(4) + "@" + rs.getLong(5);
          steps.add(
              new Ranked(
                  new Step(
                      instant(rs, 9),
                      "parked",
                      rs.getString(1),
                      "parked with key "
                          + rs.getString(2)
                          + " from "
                          + where
                          + " after "
                          + rs.getInt(6)
                          + " delayed attempt(s); next try "
                          + instant(rs, 7)
                          + (rs.getString(8) == null ? "" : "; last error: " + rs.getString(8)),
                      attrs(
                          "key", rs.getString(2),
                          "attempts", Integer.toString(rs.getInt(6)),
                          "due_at", instant(rs, 7).toString(),
                          "last_error", rs.getString(8))),
                  4));
        }
      }
    }
  }

  private void inbox(Connection c, UUID id, List<Ranked> steps) throws SQLException {
    // a message with a tenant is recorded under its id bound to the tenant (InboxKeys): found
    // while its outbox row, which names the tenant, is kept
    List<UUID> keys = new java.util.ArrayList<>(List.of(id));
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT DISTINCT tenant FROM "
                + prefix
                + "postbox_outbox WHERE message_id = ? AND tenant IS NOT NULL")) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          keys.add(dev.postbox.core.engine.InboxKeys.of(id, rs.getString(1)));
        }
      }
    }
    String sql =
        "SELECT consumer, processed_at, result, result_content_type FROM "
            + prefix
            + "postbox_inbox WHERE message_id = ANY (?) ORDER BY processed_at";
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setArray(1, c.createArrayOf("uuid", keys.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          byte[] result = rs.getBytes(3);
          String detail = "effect committed by " + rs.getString(1) + " (inbox record)";
          Map<String, String> attributes = Map.of();
          if (result != null) {
            // the handler's stored result (a responder's reply): what a repeated id gets back
            String text = new String(result, java.nio.charset.StandardCharsets.UTF_8);
            String shown = text.length() > 200 ? text.substring(0, 200) + "..." : text;
            UUID replyId = dev.postbox.core.engine.reply.ResponderHandler.replyId(id);
            detail += "; stored result (" + rs.getString(4) + "): " + shown;
            detail += "; a responder's reply to it has id " + replyId;
            attributes =
                attrs(
                    "stored_result",
                    text,
                    "stored_result_content_type",
                    rs.getString(4),
                    "reply_id",
                    replyId.toString());
          }
          steps.add(
              new Ranked(
                  new Step(instant(rs, 2), "processed", rs.getString(1), detail, attributes), 9));
        }
      }
    }
  }

  private static Instant instant(ResultSet rs, int column) throws SQLException {
    return rs.getTimestamp(column).toInstant();
  }

  private static void put(Map<String, String> m, String k, String v) {
    if (v != null) {
      m.put(k, v);
    }
  }

  private static Map<String, String> attrs(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      put(m, kv[i], kv[i + 1]);
    }
    return m;
  }
}
