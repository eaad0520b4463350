package dev.postbox.jdbc.cdc.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.spi.OutboxRecord;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Reads one {@code postbox_outbox} row from the values of a pgoutput tuple (text or binary) into an
 * {@link OutboxRecord}, the way the polling relay reads it from a result set: a row the envelope
 * rejects comes back {@linkplain OutboxRecord#unreadable() unreadable} with a stand-in message,
 * never as an exception. Columns are found by name once per relation message, so a column added by
 * a later migration does not shift them.
 */
final class OutboxTuple {

  static final String TABLE = "postbox_outbox";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<Map<String, String>> HEADERS = new TypeReference<>() {};

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

  /** The record for one inserted row, from its values in text or binary form. */
  OutboxRecord read(TupleData v) {
    long pos = v.integer(position);
    int laneNo = (int) v.integer(lane);
    Instant created = v.timestamp(createdAt);
    int tries = (int) v.integer(attempts);
    try {
      Message.Builder b =
          Message.builder(v.text(topic), v.text(type))
              .id(v.uuid(messageId))
              .schemaVersion((int) v.integer(schemaVersion))
              .key(v.text(key))
              .occurredAt(v.timestamp(occurredAt))
              .source(v.text(source))
              .correlationId(v.text(correlationId))
              .causationId(v.text(causationId))
              .tenant(v.text(tenant))
              .payload(new Payload(v.bytea(payload), v.text(contentType)));
      String json = v.json(headers);
      if (json != null) {
        headersOf(json).forEach(b::header);
      }
      return new OutboxRecord(pos, laneNo, b.build(), created, tries);
    } catch (RuntimeException e) {
      return new OutboxRecord(pos, laneNo, standIn(v), created, tries, e.toString());
    }
  }

  /** A never-published stand-in with what could be read of the row (as the polling relay does). */
  private Message standIn(TupleData v) {
    UUID id = null;
    try {
      id = v.uuid(messageId);
    } catch (RuntimeException ignored) {
      // a fresh id for the stand-in
    }
    String k = v.text(key);
    for (String[] tk :
        new String[][] {
          {v.text(topic), k}, {"postbox.unreadable", k}, {"postbox.unreadable", null}
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

  private static Map<String, String> headersOf(String json) {
    try {
      return JSON.readValue(json, HEADERS);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("corrupt headers column: " + json, e);
    }
  }
}
