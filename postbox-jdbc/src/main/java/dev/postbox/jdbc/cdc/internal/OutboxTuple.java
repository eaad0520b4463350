package dev.postbox.jdbc.cdc.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.spi.OutboxRecord;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.postgresql.util.PGbytea;

/**
 * Reads one {@code postbox_outbox} row from the text values of a pgoutput tuple into an {@link
 * OutboxRecord}, the way the polling relay reads it from a result set: a row the envelope rejects
 * comes back {@linkplain OutboxRecord#unreadable() unreadable} with a stand-in message, never as an
 * exception. Columns are found by name once per relation message, so a column added by a later
 * migration does not shift them.
 */
final class OutboxTuple {

  static final String TABLE = "postbox_outbox";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, String>> HEADERS = new TypeReference<>() {};

  /**
   * PostgreSQL's ISO text form of timestamptz ({@code 2026-12-01 11:47:58.123456+00}; the offset
   * may carry minutes and seconds), whatever the walsender's TimeZone is.
   */
  static final DateTimeFormatter TIMESTAMPTZ =
      new DateTimeFormatterBuilder()
          .append(DateTimeFormatter.ISO_LOCAL_DATE)
          .appendLiteral(' ')
          .appendValue(ChronoField.HOUR_OF_DAY, 2)
          .appendLiteral(':')
          .appendValue(ChronoField.MINUTE_OF_HOUR, 2)
          .appendLiteral(':')
          .appendValue(ChronoField.SECOND_OF_MINUTE, 2)
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 1, 9, true)
          .optionalEnd()
          .appendOffset("+HH:mm:ss", "+00")
          .toFormatter();

  private final int position;
  private final int messageId;
  private final int topic;
  private final int key;
  private final int lane;
  private final int type;
  private final int schemaVersion;
  private final int occurredAt;
  private final int source;
  private final int correlationId;
  private final int causationId;
  private final int tenant;
  private final int headers;
  private final int contentType;
  private final int payload;
  private final int createdAt;
  private final int attempts;

  /** Column indexes from the relation message's column names; fails if one is missing. */
  OutboxTuple(List<String> columns) {
    Map<String, Integer> at = new HashMap<>();
    for (int i = 0; i < columns.size(); i++) {
      at.put(columns.get(i), i);
    }
    position = require(at, "position");
    messageId = require(at, "message_id");
    topic = require(at, "topic");
    key = require(at, "msg_key");
    lane = require(at, "lane");
    type = require(at, "type");
    schemaVersion = require(at, "schema_version");
    occurredAt = require(at, "occurred_at");
    source = require(at, "source");
    correlationId = require(at, "correlation_id");
    causationId = require(at, "causation_id");
    tenant = require(at, "tenant");
    headers = require(at, "headers");
    contentType = require(at, "content_type");
    payload = require(at, "payload");
    createdAt = require(at, "created_at");
    attempts = require(at, "attempts");
  }

  private static int require(Map<String, Integer> at, String column) {
    Integer i = at.get(column);
    if (i == null) {
      throw new IllegalStateException(
          "the replication stream's " + TABLE + " has no column " + column + ": " + at.keySet());
    }
    return i;
  }

  /**
   * The record for one inserted row; {@code values} are the columns' text forms (null for NULL).
   */
  OutboxRecord read(String[] values) {
    long pos = Long.parseLong(values[position]);
    int laneNo = Integer.parseInt(values[lane]);
    Instant created = timestamp(values[createdAt]);
    int tries = Integer.parseInt(values[attempts]);
    try {
      Message.Builder b =
          Message.builder(values[topic], values[type])
              .id(UUID.fromString(values[messageId]))
              .schemaVersion(Integer.parseInt(values[schemaVersion]))
              .key(values[key])
              .occurredAt(timestamp(values[occurredAt]))
              .source(values[source])
              .correlationId(values[correlationId])
              .causationId(values[causationId])
              .tenant(values[tenant])
              .payload(new Payload(bytea(values[payload]), values[contentType]));
      if (values[headers] != null) {
        headersOf(values[headers]).forEach(b::header);
      }
      return new OutboxRecord(pos, laneNo, b.build(), created, tries);
    } catch (RuntimeException e) {
      return new OutboxRecord(pos, laneNo, standIn(values), created, tries, e.toString());
    }
  }

  /** A never-published stand-in with what could be read of the row (as the polling relay does). */
  private Message standIn(String[] values) {
    UUID id = null;
    try {
      id = UUID.fromString(values[messageId]);
    } catch (RuntimeException ignored) {
      // a fresh id for the stand-in
    }
    String k = values[key];
    for (String[] tk :
        new String[][] {
          {values[topic], k}, {"postbox.unreadable", k}, {"postbox.unreadable", null}
        }) {
      try {
        Message.Builder b = Message.builder(tk[0], "postbox.unreadable");
        if (id != null) {
          b.id(id);
        }
        return b.key(tk[1] == null || tk[1].isEmpty() ? null : tk[1]).build();
      } catch (RuntimeException invalid) {
        // try the next, plainer stand-in
      }
    }
    return Message.builder("postbox.unreadable", "postbox.unreadable").build();
  }

  static Instant timestamp(String text) {
    return OffsetDateTime.parse(text, TIMESTAMPTZ).toInstant();
  }

  static byte[] bytea(String text) {
    if (text == null) {
      throw new IllegalArgumentException("payload is NULL");
    }
    try {
      return PGbytea.toBytes(text.getBytes(StandardCharsets.US_ASCII));
    } catch (SQLException e) {
      throw new IllegalArgumentException("payload is not bytea text", e);
    }
  }

  private static Map<String, String> headersOf(String json) {
    try {
      return JSON.readValue(json, HEADERS);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("corrupt headers column: " + json, e);
    }
  }
}
