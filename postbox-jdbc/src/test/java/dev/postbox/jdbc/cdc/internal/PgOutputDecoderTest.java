package dev.postbox.jdbc.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.OutboxRecord;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
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
    assertThat(OutboxTuple.timestamp("2026-12-01 11:47:58+00"))
        .isEqualTo(Instant.parse("2026-12-01T11:47:58Z"));
    assertThat(OutboxTuple.timestamp("2026-12-01 11:47:58.5+05:30"))
        .isEqualTo(Instant.parse("2026-12-01T06:17:58.5Z"));
    assertThat(OutboxTuple.timestamp("2026-12-01 11:47:58.000001-03"))
        .isEqualTo(Instant.parse("2026-12-01T14:47:58.000001Z"));
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
