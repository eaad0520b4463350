package dev.postbox.jdbc.cdc.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.core.spi.OutboxRecord;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The envelope of an emitted logical message: a JSON object of the outbox row's columns in their
 * PostgreSQL text forms (as pgoutput sends a row), so that the relay reads it with the same {@link
 * OutboxTuple} as an inserted row. It has no position (nothing to mark): {@code -1}.
 */
public final class EmittedEnvelope {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<LinkedHashMap<String, String>> MAP = new TypeReference<>() {};

  private EmittedEnvelope() {}

  /** The columns of {@code m} as text. */
  public static Map<String, String> columns(Message m) {
    Map<String, String> c = new LinkedHashMap<>();
    c.put("position", "-1");
    c.put("message_id", m.id().toString());
    c.put("topic", m.topic());
    c.put("msg_key", m.key().orElse(null));
    c.put("lane", "0");
    c.put("type", m.type());
    c.put("schema_version", Integer.toString(m.schemaVersion()));
    c.put("occurred_at", time(m.occurredAt()));
    c.put("source", m.source());
    c.put("correlation_id", m.correlationId().orElse(null));
    c.put("causation_id", m.causationId().orElse(null));
    c.put("tenant", m.tenant().orElse(null));
    try {
      // the writing transaction's trace context goes with the message, as with an outbox row
      Map<String, String> headers = dev.postbox.core.tracing.TraceHeaders.withCurrent(m.headers());
      c.put("headers", headers.isEmpty() ? null : JSON.writeValueAsString(headers));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    c.put("content_type", m.payload().contentType());
    c.put("payload", "\\x" + HexFormat.of().formatHex(m.payload().unsafeBytes()));
    c.put("created_at", time(m.occurredAt()));
    c.put("attempts", "0");
    return c;
  }

  /** Reads an emitted envelope; an envelope the message model rejects comes back unreadable. */
  static OutboxRecord read(byte[] content) {
    Map<String, String> c;
    try {
      c = JSON.readValue(content, MAP);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("an emitted outbox message is not a JSON envelope", e);
    }
    List<String> names = new ArrayList<>(c.keySet());
    return new OutboxTuple(names).read(TupleData.ofText(c.values().toArray(String[]::new)));
  }

  private static String time(Instant t) {
    return TupleData.TIMESTAMPTZ.format(t.atOffset(ZoneOffset.UTC));
  }
}
