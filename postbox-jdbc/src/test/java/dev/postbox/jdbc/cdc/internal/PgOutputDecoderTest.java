package dev.postbox.jdbc.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.OutboxRecord;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The pgoutput v1 messages as PostgreSQL's protocol documentation lays them out, built by hand. */
class PgOutputDecoderTest {

  private static final List<String> COLUMNS =
      List.of(
          "position",
          "message_id",
          "topic",
          "msg_key",
          "lane",
          "type",
          "schema_version",
          "occurred_at",
          "source",
          "correlation_id",
          "causation_id",
          "tenant",
          "headers",
          "content_type",
          "payload",
          "created_at",
          "published_at",
          "failed_at",
          "attempts",
          "last_error",
          "published_partition",
          "published_offset",
          "hold");

  @Test
  void decodesTheInsertsOfACommittedTransactionInOrder() throws IOException {
    PgOutputDecoder d = new PgOutputDecoder("app");
    assertThat(d.decode(begin(500))).isEmpty();
    assertThat(d.decode(relation(16384, "app", "postbox_outbox", COLUMNS))).isEmpty();
    UUID id1 = UUID.randomUUID();
    UUID id2 = UUID.randomUUID();
    assertThat(d.decode(insert(16384, row(7, id1, "k1", "{\"seq\":\"1\"}", "\\x7b7d")))).isEmpty();
    assertThat(d.decode(insert(16384, row(8, id2, null, null, "\\x")))).isEmpty();
    assertThat(d.inTransaction()).isTrue();
    Optional<CdcTransaction> tx = d.decode(commit(500, 520));
    assertThat(tx).isPresent();
    assertThat(tx.get().commitLsn()).isEqualTo(500);
    assertThat(tx.get().endLsn()).isEqualTo(520);
    List<OutboxRecord> rows = tx.get().records();
    assertThat(rows).extracting(OutboxRecord::position).containsExactly(7L, 8L);
    OutboxRecord first = rows.get(0);
    assertThat(first.readable()).isTrue();
    assertThat(first.message().id()).isEqualTo(id1);
    assertThat(first.message().key()).contains("k1");
    assertThat(first.message().header("seq")).contains("1");
    assertThat(first.message().payload().unsafeBytes())
        .isEqualTo("{}".getBytes(StandardCharsets.UTF_8));
    assertThat(first.message().occurredAt())
        .isEqualTo(Instant.parse("2026-12-01T10:47:58.123456Z"));
    assertThat(first.lane()).isEqualTo(3);
    assertThat(rows.get(1).message().key()).isEmpty();
    assertThat(d.inTransaction()).isFalse();
  }

  @Test
  void ignoresOtherTablesAndOtherSchemas() throws IOException {
    PgOutputDecoder d = new PgOutputDecoder("app");
    d.decode(begin(100));
    d.decode(relation(1, "other", "postbox_outbox", COLUMNS));
    d.decode(relation(2, "app", "orders", List.of("id")));
    d.decode(insert(1, row(1, UUID.randomUUID(), "k", null, "\\x")));
    d.decode(insert(2, new String[] {"42"}));
    assertThat(d.decode(commit(100, 120)).orElseThrow().records()).isEmpty();
  }

  @Test
  void aRowTheEnvelopeRejectsComesBackUnreadable() throws IOException {
    PgOutputDecoder d = new PgOutputDecoder("app");
    d.decode(begin(100));
    d.decode(relation(1, "app", "postbox_outbox", COLUMNS));
    d.decode(insert(1, row(5, UUID.randomUUID(), "k", "not json", "\\x")));
    OutboxRecord r = d.decode(commit(100, 120)).orElseThrow().records().get(0);
    assertThat(r.readable()).isFalse();
    assertThat(r.position()).isEqualTo(5);
    assertThat(r.message().key()).contains("k");
  }

  @Test
  void parsesTimestampsWithAnyOffset() {
    assertThat(TupleData.timestamp("2026-12-01 11:47:58+00"))
        .isEqualTo(Instant.parse("2026-12-01T11:47:58Z"));
    assertThat(TupleData.timestamp("2026-12-01 11:47:58.5+05:30"))
        .isEqualTo(Instant.parse("2026-12-01T06:17:58.5Z"));
    assertThat(TupleData.timestamp("2026-12-01 11:47:58.000001-03"))
        .isEqualTo(Instant.parse("2026-12-01T14:47:58.000001Z"));
  }

  @Test
  void decodesBinaryValuesAsTheSendFunctionsLayThemOut() throws IOException {
    PgOutputDecoder d = new PgOutputDecoder("app");
    d.decode(begin(600));
    d.decode(relation(16384, "app", "postbox_outbox", COLUMNS));
    UUID id = UUID.randomUUID();
    long micros =
        Duration.between(
                    Instant.parse("2000-01-01T00:00:00Z"),
                    Instant.parse("2026-12-01T10:47:58.123456Z"))
                .toNanos()
            / 1_000;
    Map<String, byte[]> v = new LinkedHashMap<>();
    for (String c : COLUMNS) {
      v.put(c, null);
    }
    v.put("position", ByteBuffer.allocate(8).putLong(9).array());
    v.put(
        "message_id",
        ByteBuffer.allocate(16)
            .putLong(id.getMostSignificantBits())
            .putLong(id.getLeastSignificantBits())
            .array());
    v.put("topic", utf8("orders"));
    v.put("msg_key", utf8("k\u00e9"));
    v.put("lane", ByteBuffer.allocate(2).putShort((short) 5).array());
    v.put("type", utf8("order.created"));
    v.put("schema_version", ByteBuffer.allocate(4).putInt(2).array());
    v.put("occurred_at", ByteBuffer.allocate(8).putLong(micros).array());
    v.put("source", utf8("/shop"));
    v.put("headers", concat(new byte[] {1}, utf8("{\"seq\":\"4\"}")));
    v.put("content_type", utf8("application/octet-stream"));
    v.put("payload", new byte[] {0, (byte) 0xff, '\\', 'x'});
    v.put("created_at", ByteBuffer.allocate(8).putLong(micros + 1).array());
    v.put("attempts", ByteBuffer.allocate(4).putInt(0).array());
    d.decode(binaryInsert(16384, v.values().toArray(new byte[0][])));
    // a second row whose occurred_at is 'infinity': unreadable, not an exception
    v.put("occurred_at", ByteBuffer.allocate(8).putLong(Long.MAX_VALUE).array());
    v.put("message_id", ByteBuffer.allocate(16).putLong(1).putLong(2).array());
    d.decode(binaryInsert(16384, v.values().toArray(new byte[0][])));
    List<OutboxRecord> rows = d.decode(commit(600, 620)).orElseThrow().records();
    OutboxRecord r = rows.get(0);
    assertThat(r.readable()).isTrue();
    assertThat(r.position()).isEqualTo(9);
    assertThat(r.lane()).isEqualTo(5);
    assertThat(r.message().id()).isEqualTo(id);
    assertThat(r.message().key()).contains("k\u00e9");
    assertThat(r.message().schemaVersion()).isEqualTo(2);
    assertThat(r.message().occurredAt()).isEqualTo(Instant.parse("2026-12-01T10:47:58.123456Z"));
    assertThat(r.createdAt()).isEqualTo(Instant.parse("2026-12-01T10:47:58.123457Z"));
    assertThat(r.message().header("seq")).contains("4");
    assertThat(r.message().payload().unsafeBytes()).containsExactly(0, 0xff, '\\', 'x');
    assertThat(rows.get(1).readable()).isFalse();
    assertThat(rows.get(1).message().id()).isEqualTo(new UUID(1, 2));
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static ByteBuffer binaryInsert(int oid, byte[][] values) throws IOException {
    return message(out -> {
      out.writeByte('I');
      out.writeInt(oid);
      out.writeByte('N');
      out.writeShort(values.length);
      for (byte[] v : values) {
        if (v == null) {
          out.writeByte('n');
        } else {
          out.writeByte('b');
          out.writeInt(v.length);
          out.write(v);
        }
      }
    });
  }

  private static String[] row(long position, UUID id, String key, String headers, String payload) {
    Map<String, String> v = new LinkedHashMap<>();
    for (String c : COLUMNS) {
      v.put(c, null);
    }
    v.put("position", Long.toString(position));
    v.put("message_id", id.toString());
    v.put("topic", "orders");
    v.put("msg_key", key);
    v.put("lane", "3");
    v.put("type", "order.created");
    v.put("schema_version", "1");
    v.put("occurred_at", "2026-12-01 11:47:58.123456+01");
    v.put("source", "/shop");
    v.put("headers", headers);
    v.put("content_type", "application/json");
    v.put("payload", payload);
    v.put("created_at", "2026-12-01 11:47:59+00");
    v.put("attempts", "0");
    return v.values().toArray(new String[0]);
  }

  private static ByteBuffer begin(long finalLsn) throws IOException {
    return message(out -> {
      out.writeByte('B');
      out.writeLong(finalLsn);
      out.writeLong(0);
      out.writeInt(77);
    });
  }

  private static ByteBuffer commit(long commitLsn, long endLsn) throws IOException {
    return message(out -> {
      out.writeByte('C');
      out.writeByte(0);
      out.writeLong(commitLsn);
      out.writeLong(endLsn);
      out.writeLong(0);
    });
  }

  private static ByteBuffer relation(int oid, String ns, String name, List<String> columns)
      throws IOException {
    return message(out -> {
      out.writeByte('R');
      out.writeInt(oid);
      cstring(out, ns);
      cstring(out, name);
      out.writeByte('d');
      out.writeShort(columns.size());
      for (String c : columns) {
        out.writeByte(0);
        cstring(out, c);
        out.writeInt(25);
        out.writeInt(-1);
      }
    });
  }

  private static ByteBuffer insert(int oid, String[] values) throws IOException {
    return message(out -> {
      out.writeByte('I');
      out.writeInt(oid);
      out.writeByte('N');
      out.writeShort(values.length);
      for (String v : values) {
        if (v == null) {
          out.writeByte('n');
        } else {
          byte[] b = v.getBytes(StandardCharsets.UTF_8);
          out.writeByte('t');
          out.writeInt(b.length);
          out.write(b);
        }
      }
    });
  }

  private static void cstring(DataOutputStream out, String s) throws IOException {
    out.write(s.getBytes(StandardCharsets.UTF_8));
    out.writeByte(0);
  }

  private interface Writer {
    void write(DataOutputStream out) throws IOException;
  }

  private static ByteBuffer message(Writer w) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      w.write(out);
    }
    // as pgjdbc hands it over: a view into a larger buffer
    byte[] raw = bytes.toByteArray();
    byte[] padded = new byte[raw.length + 8];
    System.arraycopy(raw, 0, padded, 4, raw.length);
    return ByteBuffer.wrap(padded, 4, raw.length);
  }
}
