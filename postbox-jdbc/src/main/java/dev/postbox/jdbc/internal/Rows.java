package dev.postbox.jdbc.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.spi.OutboxRecord;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.Map;
import java.util.UUID;

/** Mapping between {@link Message} and outbox rows, in one place. */
final class Rows {

  static final String COLUMNS =
      "message_id, topic, msg_key, lane, type, schema_version, occurred_at, source, correlation_id,"
          + " causation_id, tenant, headers, content_type, payload";

  static final String VALUES = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, String>> HEADERS = new TypeReference<>() {};

  private Rows() {}

  /** Binds a message to {@link #VALUES} starting at parameter {@code first}. */
  static void bind(java.sql.PreparedStatement ps, int first, Message m) throws SQLException {
    int i = first;
    ps.setObject(i++, m.id());
    ps.setString(i++, m.topic());
    ps.setString(i++, m.key().orElse(null));
    ps.setShort(i++, (short) Lanes.laneOf(m));
    ps.setString(i++, m.type());
    ps.setInt(i++, m.schemaVersion());
    ps.setTimestamp(i++, Timestamp.from(m.occurredAt()));
    ps.setString(i++, m.source());
    ps.setString(i++, m.correlationId().orElse(null));
    ps.setString(i++, m.causationId().orElse(null));
    ps.setString(i++, m.tenant().orElse(null));
    // The writing transaction's trace context (if an OpenTelemetry SDK records one) goes with the
    // row.
    Map<String, String> headers = dev.postbox.core.tracing.TraceHeaders.withCurrent(m.headers());
    ps.setString(i++, headers.isEmpty() ? null : toJson(headers));
    ps.setString(i++, m.payload().contentType());
    ps.setBytes(i, m.payload().unsafeBytes());
  }

  /** Reads a row selected with {@code position, created_at, attempts, } + {@link #COLUMNS}. */
  static OutboxRecord read(ResultSet rs) throws SQLException {
    Message.Builder b =
        Message.builder(rs.getString("topic"), rs.getString("type"))
            .id(rs.getObject("message_id", UUID.class))
            .schemaVersion(rs.getInt("schema_version"))
            .key(rs.getString("msg_key"))
            .occurredAt(rs.getTimestamp("occurred_at").toInstant())
            .source(rs.getString("source"))
            .correlationId(rs.getString("correlation_id"))
            .causationId(rs.getString("causation_id"))
            .tenant(rs.getString("tenant"))
            .payload(new Payload(rs.getBytes("payload"), rs.getString("content_type")));
    String headers = rs.getString("headers");
    if (headers != null) {
      fromJson(headers).forEach(b::header);
    }
    return new OutboxRecord(
        rs.getLong("position"),
        rs.getShort("lane"),
        b.build(),
        rs.getTimestamp("created_at").toInstant(),
        rs.getInt("attempts"));
  }

  /**
   * Like {@link #read}, but a row the envelope rejects (a blank type, a schema version below 1,
   * headers that are not a map of strings, ...) comes back {@linkplain OutboxRecord#unreadable()
   * unreadable}, with a stand-in message carrying its topic and key where those are valid, instead
   * of failing the whole claim.
   */
  static OutboxRecord readForRelay(ResultSet rs) throws SQLException {
    try {
      return read(rs);
    } catch (RuntimeException e) {
      String topic = rs.getString("topic");
      String key = rs.getString("msg_key");
      UUID id = rs.getObject("message_id", UUID.class);
      Message m = standIn(topic, key, id);
      if (m == null) {
        m = standIn("postbox.unreadable", key, id);
      }
      if (m == null) {
        m = standIn("postbox.unreadable", null, id);
      }
      return new OutboxRecord(
          rs.getLong("position"),
          rs.getShort("lane"),
          m,
          rs.getTimestamp("created_at").toInstant(),
          rs.getInt("attempts"),
          e.toString());
    }
  }

  /** A never-published stand-in with what could be read of a row, or null if even that fails. */
  private static Message standIn(String topic, String key, UUID id) {
    try {
      Message.Builder b = Message.builder(topic, "postbox.unreadable");
      if (id != null) {
        b.id(id);
      }
      return b.key(key == null || key.isEmpty() ? null : key).build();
    } catch (RuntimeException invalid) {
      return null;
    }
  }

  private static String toJson(Map<String, String> headers) {
    try {
      return JSON.writeValueAsString(headers);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot encode headers", e);
    }
  }

  private static Map<String, String> fromJson(String json) {
    try {
      return JSON.readValue(json, HEADERS);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("corrupt headers column: " + json, e);
    }
  }
}
