package dev.postbox.kafka;

import dev.postbox.core.DecodingException;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.MessageConflictException;
import dev.postbox.core.codec.EventTypes;
import dev.postbox.core.codec.Upcaster;
import dev.postbox.core.consumer.TenantRejectedException;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * The bad-input corpus of issue 19: records a plain Kafka producer can write, each with the end
 * state a subscriber must reach for it (per delivery guarantee where they differ). {@link
 * BadInputCorpusIT} sends them and checks; docs/proof/bad-input.md shows the same table.
 */
final class BadInputCorpus {

  static final String TYPE = "corpus.item";
  static final int CURRENT_VERSION = 3;
  static final String TENANT = "acme";

  /** The event a good record carries (version 3; version 2 had {@code qty}, upcast). */
  record Item(String sku, int quantity) {}

  static EventTypes eventTypes() {
    return EventTypes.builder()
        .register(TYPE, CURRENT_VERSION, Item.class)
        .upcaster(
            TYPE,
            2,
            Upcaster.objects(o -> {
              o.set("quantity", o.remove("qty"));
              return o;
            }))
        .build();
  }

  /** What a subscriber must have done with a record. */
  sealed interface End {
    String describe();
  }

  /** Applied {@code times} times in all (counting earlier records with the same id). */
  record Applied(int times) implements End {
    public String describe() {
      return times == 1 ? "applied" : "applied (" + times + " effects for the id: no inbox)";
    }
  }

  /** Not applied, not dead-lettered; counted under {@code counter}. */
  record Ignored(String counter) implements End {
    public String describe() {
      return "ignored, counted (" + counter + ")";
    }
  }

  /** Dead-lettered with this classification and error class; the message names {@code reason}. */
  record DeadLettered(Classification classification, Class<?> error, String reason) implements End {
    public String describe() {
      return "dead-lettered " + classification + " " + error.getSimpleName() + ": " + reason;
    }
  }

  /** One record as sent: key, value, headers in order (duplicates allowed). */
  static final class Rec {
    UUID id = UUID.randomUUID();
    byte[] key;
    byte[] value;
    final List<Header> headers = new ArrayList<>();

    /** A valid envelope of {@code key} (null: none) with a valid version-3 payload. */
    static Rec valid(String key) {
      Rec r = new Rec();
      r.key = key == null ? null : utf8(key);
      r.value = utf8("{\"sku\":\"s-" + (key == null ? "none" : json(key)) + "\",\"quantity\":1}");
      r.set(KafkaRecords.CE_SPECVERSION, "1.0");
      r.set(KafkaRecords.CE_ID, r.id.toString());
      r.set(KafkaRecords.CE_SOURCE, "/corpus");
      r.set(KafkaRecords.CE_TYPE, TYPE);
      r.set(KafkaRecords.CE_TIME, Instant.now().toString());
      r.set(KafkaRecords.CE_SCHEMAVERSION, Integer.toString(CURRENT_VERSION));
      r.set(KafkaRecords.CONTENT_TYPE, "application/json");
      r.set(KafkaRecords.CE_TENANT, TENANT);
      if (key != null) {
        r.set(KafkaRecords.CE_PARTITIONKEY, key);
      }
      return r;
    }

    /** Replaces every header {@code name} with one of {@code value}, at the same place. */
    Rec set(String name, String value) {
      return setBytes(name, value == null ? null : utf8(value));
    }

    Rec setBytes(String name, byte[] value) {
      int at = -1;
      for (int i = 0; i < headers.size(); i++) {
        if (headers.get(i).key().equals(name)) {
          at = at < 0 ? i : at;
        }
      }
      remove(name);
      RecordHeader h = new RecordHeader(name, value);
      if (at < 0 || at > headers.size()) {
        headers.add(h);
      } else {
        headers.add(at, h);
      }
      return this;
    }

    Rec add(String name, byte[] value) {
      headers.add(new RecordHeader(name, value));
      return this;
    }

    Rec remove(String name) {
      for (Iterator<Header> it = headers.iterator(); it.hasNext(); ) {
        if (it.next().key().equals(name)) {
          it.remove();
        }
      }
      return this;
    }

    Rec value(String json) {
      value = utf8(json);
      return this;
    }

    Rec copy() {
      Rec r = new Rec();
      r.id = id;
      r.key = key == null ? null : key.clone();
      r.value = value == null ? null : value.clone();
      r.headers.addAll(headers);
      return r;
    }
  }

  /**
   * One corpus entry: the records it sends (the last one is the one judged; earlier ones set it up,
   * like the original of a duplicate) and its end state per guarantee.
   */
  record Case(String name, String what, List<Rec> records, Map<DeliveryGuarantee, End> ends) {
    Rec judged() {
      return records.get(records.size() - 1);
    }

    End end(DeliveryGuarantee g) {
      return ends.get(g);
    }
  }

  private static final End APPLIED = new Applied(1);

  private static DeadLettered decoding(String reason) {
    return new DeadLettered(Classification.PERMANENT, DecodingException.class, reason);
  }

  private static DeadLettered tenant(String reason) {
    return new DeadLettered(Classification.PERMANENT, TenantRejectedException.class, reason);
  }

  private static Map<DeliveryGuarantee, End> all(End end) {
    return Map.of(
        DeliveryGuarantee.AT_MOST_ONCE, end,
        DeliveryGuarantee.AT_LEAST_ONCE, end,
        DeliveryGuarantee.EFFECTIVELY_ONCE, end);
  }

  /** The corpus; {@code key} is each case's key prefix (the good record after it uses it too). */
  static List<Case> cases() {
    List<Case> c = new ArrayList<>();
    one(
        c,
        "no-headers",
        "no headers at all",
        r -> r.headers.clear(),
        decoding("missing header ce_specversion"));
    one(
        c,
        "empty-value",
        "a 0-byte value",
        r -> r.value = new byte[0],
        decoding("cannot decode JSON"));
    one(
        c,
        "null-value",
        "a null value (tombstone) with a valid envelope",
        r -> r.value = null,
        decoding("cannot decode JSON"));
    one(
        c,
        "utf8-value",
        "invalid UTF-8 in the JSON value",
        r ->
            r.value =
                concat(
                    utf8("{\"sku\":\""),
                    new byte[] {(byte) 0xC3, (byte) 0x28},
                    utf8("\",\"quantity\":1}")),
        decoding("cannot decode JSON"));
    one(
        c,
        "utf8-type",
        "invalid UTF-8 in ce_type",
        r -> r.setBytes(KafkaRecords.CE_TYPE, new byte[] {(byte) 0xFF, 'x'}),
        decoding("header ce_type: not valid UTF-8"));
    one(
        c,
        "utf8-key",
        "invalid UTF-8 record key, no ce_partitionkey",
        r -> {
          r.remove(KafkaRecords.CE_PARTITIONKEY);
          r.key = new byte[] {'k', (byte) 0xE2, (byte) 0x82};
        },
        decoding("record key: not valid UTF-8"));
    one(
        c,
        "utf8-header",
        "invalid UTF-8 in an application header",
        r -> r.add("note", new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}),
        decoding("header note: not valid UTF-8"));
    one(
        c,
        "ten-mb",
        "a 10 MB value (valid JSON, topic allows 16 MB)",
        r -> r.value("{\"sku\":\"" + "x".repeat(10 * 1024 * 1024) + "\",\"quantity\":1}"),
        APPLIED);
    one(
        c,
        "specversion-03",
        "ce_specversion 0.3",
        r -> r.set(KafkaRecords.CE_SPECVERSION, "0.3"),
        decoding("unsupported CloudEvents spec version"));
    one(
        c,
        "specversion-missing",
        "no ce_specversion",
        r -> r.remove(KafkaRecords.CE_SPECVERSION),
        decoding("missing header ce_specversion"));
    one(
        c,
        "id-missing",
        "no ce_id",
        r -> r.remove(KafkaRecords.CE_ID),
        decoding("missing header ce_id"));
    one(
        c,
        "id-not-uuid",
        "ce_id 'order-42'",
        r -> r.set(KafkaRecords.CE_ID, "order-42"),
        decoding("ce_id:"));
    one(
        c,
        "id-no-dashes",
        "ce_id as 32 hex digits without dashes",
        r -> r.set(KafkaRecords.CE_ID, r.id.toString().replace("-", "")),
        decoding("ce_id:"));
    one(c, "id-empty", "ce_id empty", r -> r.set(KafkaRecords.CE_ID, ""), decoding("ce_id:"));
    sameId(c);
    one(
        c,
        "forged-attempt",
        "forged pb_retry_attempt 999",
        r -> r.add("pb_retry_attempt", utf8("999")),
        APPLIED);
    one(
        c,
        "forged-due",
        "forged pb_retry_due ten years ahead",
        r -> r.add("pb_retry_due", utf8(Instant.now().plusSeconds(10L * 365 * 86_400).toString())),
        APPLIED);
    one(
        c,
        "forged-first-failure",
        "forged pb_retry_first_failure 1970 and pb_retry_origin",
        r ->
            r.add("pb_retry_first_failure", utf8("1970-01-01T00:00:00Z"))
                .add("pb_retry_origin", utf8("elsewhere-9@1")),
        APPLIED);
    one(
        c,
        "forged-app-attempt",
        "application headers retry-attempt 999, x-due 2036",
        r -> r.add("retry-attempt", utf8("999")).add("x-due", utf8("2036-01-01T00:00:00Z")),
        APPLIED);
    one(
        c,
        "tenant-forged",
        "ce_tenant 'evil'",
        r -> r.set(KafkaRecords.CE_TENANT, "evil"),
        tenant("has a tenant that is not allowed"));
    one(
        c,
        "tenant-missing",
        "no ce_tenant",
        r -> r.remove(KafkaRecords.CE_TENANT),
        tenant("has no tenant"));
    one(
        c,
        "tenant-empty",
        "ce_tenant empty",
        r -> r.set(KafkaRecords.CE_TENANT, ""),
        tenant("not allowed"));
    one(
        c,
        "tenant-case",
        "ce_tenant 'ACME' (tenants are case-sensitive)",
        r -> r.set(KafkaRecords.CE_TENANT, "ACME"),
        tenant("not allowed"));
    one(
        c,
        "tenant-twice",
        "ce_tenant 'evil' then 'acme' (the last header wins)",
        r ->
            r.remove(KafkaRecords.CE_TENANT)
                .add(KafkaRecords.CE_TENANT, utf8("evil"))
                .add(KafkaRecords.CE_TENANT, utf8(TENANT)),
        APPLIED);
    one(
        c,
        "version-future",
        "schema version 4 (newer than the consumer's 3)",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "4"),
        decoding("is newer than the current"));
    one(
        c,
        "version-ancient",
        "schema version 1 (no upcaster from 1)",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "1"),
        decoding("no upcaster from schema version 1"));
    one(
        c,
        "version-old",
        "schema version 2 (upcast to 3)",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "2").value("{\"sku\":\"old\",\"qty\":2}"),
        APPLIED);
    one(
        c,
        "version-zero",
        "schema version 0",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "0"),
        decoding("ce_schemaversion:"));
    one(
        c,
        "version-huge",
        "schema version 99999999999",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "99999999999"),
        decoding("ce_schemaversion:"));
    one(
        c,
        "version-text",
        "schema version 'v3'",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "v3"),
        decoding("ce_schemaversion:"));
    c.add(new Case("null-key", "null key and no ce_partitionkey", List.of(noKey()), all(APPLIED)));
    one(
        c,
        "dup-id-header",
        "two ce_id headers, garbage then valid (the last wins)",
        r ->
            r.remove(KafkaRecords.CE_ID)
                .add(KafkaRecords.CE_ID, utf8("garbage"))
                .add(KafkaRecords.CE_ID, utf8(r.id.toString())),
        APPLIED);
    one(
        c,
        "dup-app-header",
        "the same application header three times",
        r -> r.add("seq", utf8("1")).add("seq", utf8("2")).add("seq", utf8("3")),
        APPLIED);
    one(
        c,
        "huge-header",
        "a 512 KB application header value",
        r -> r.add("note", utf8("n".repeat(512 * 1024))),
        APPLIED);
    one(
        c,
        "huge-type",
        "a 64 KB ce_type (an unknown type)",
        r -> r.set(KafkaRecords.CE_TYPE, "t".repeat(64 * 1024)),
        new Ignored("unknownTypes"));
    one(
        c,
        "unknown-type",
        "ce_type of a type the consumer does not know",
        r -> r.set(KafkaRecords.CE_TYPE, "corpus.other"),
        new Ignored("unknownTypes"));
    one(
        c,
        "content-text",
        "content-type text/plain",
        r -> r.set(KafkaRecords.CONTENT_TYPE, "text/plain"),
        decoding("is not JSON"));
    one(
        c,
        "content-structured",
        "content-type application/cloudevents+json (structured mode)",
        r -> r.set(KafkaRecords.CONTENT_TYPE, "application/cloudevents+json"),
        decoding("structured content mode"));
    one(
        c,
        "content-latin1",
        "content-type application/json; charset=latin1",
        r -> r.set(KafkaRecords.CONTENT_TYPE, "application/json; charset=latin1"),
        decoding("is not JSON"));
    one(
        c,
        "content-missing",
        "no content-type (octet-stream)",
        r -> r.remove(KafkaRecords.CONTENT_TYPE),
        decoding("is not JSON"));
    one(
        c,
        "time-garbage",
        "ce_time 'yesterday'",
        r -> r.set(KafkaRecords.CE_TIME, "yesterday"),
        decoding("ce_time:"));
    one(
        c,
        "time-missing",
        "no ce_time (the record timestamp is used)",
        r -> r.remove(KafkaRecords.CE_TIME),
        APPLIED);
    one(
        c,
        "source-missing",
        "no ce_source",
        r -> r.remove(KafkaRecords.CE_SOURCE),
        decoding("missing header ce_source"));
    one(
        c,
        "source-not-uri",
        "ce_source 'a b<>'",
        r -> r.set(KafkaRecords.CE_SOURCE, "a b<>"),
        decoding("not a valid message"));
    one(c, "json-null", "JSON null", r -> r.value("null"), decoding("JSON is null"));
    one(
        c,
        "json-shape",
        "JSON of the wrong shape",
        r -> r.value("{\"sku\":[1],\"quantity\":\"x\"}"),
        decoding("cannot decode JSON"));
    one(
        c,
        "json-trailing",
        "JSON with trailing garbage",
        r -> r.value("{\"sku\":\"a\",\"quantity\":1} {"),
        decoding("cannot decode JSON"));
    one(
        c,
        "json-deep",
        "JSON nested 100,000 deep",
        r -> r.value("[".repeat(100_000) + "]".repeat(100_000)),
        decoding("cannot decode JSON"));
    one(
        c,
        "json-unknown-fields",
        "JSON with unknown fields",
        r -> r.value("{\"sku\":\"a\",\"quantity\":1,\"extra\":{\"x\":[1,2]}}"),
        APPLIED);
    one(
        c,
        "null-header",
        "an application header with a null value (skipped)",
        r -> r.add("note", null),
        APPLIED);
    one(
        c,
        "reserved-upper",
        "header CE_ID in upper case beside ce_id (ignored: reserved)",
        r -> r.add("CE_ID", utf8("not-a-uuid")),
        APPLIED);
    unstorableText(c);
    one(
        c,
        "key-mismatch",
        "ce_partitionkey differs from the record key (the header wins)",
        r -> r.key = utf8("other"),
        APPLIED);
    return c;
  }

  /**
   * Issue 38: text PostgreSQL's {@code text} cannot hold (NUL; invalid UTF-8; lone surrogates in
   * JSON escapes) in every text-bearing part of a record. A record that is dead-lettered keeps it
   * (escaped where a text column holds it) and never stalls its key or partition; one that is valid
   * is applied. The cases that would be applied otherwise carry the tenant 'evil', so that their
   * text reaches the dead-letter store.
   */
  private static void unstorableText(List<Case> c) {
    byte[] invalidUtf8 = {'a', (byte) 0xC3, 0};
    one(
        c,
        "nul-tenant",
        "NUL in ce_tenant",
        r -> r.set(KafkaRecords.CE_TENANT, "ac\u0000me"),
        tenant("not allowed"));
    one(
        c,
        "utf8-tenant",
        "invalid UTF-8 (and a NUL) in ce_tenant",
        r -> r.setBytes(KafkaRecords.CE_TENANT, invalidUtf8),
        decoding("header ce_tenant: not valid UTF-8"));
    one(
        c,
        "nul-id",
        "NUL in ce_id",
        r -> r.set(KafkaRecords.CE_ID, "id\u0000"),
        decoding("ce_id:"));
    one(
        c,
        "nul-time",
        "NUL in ce_time",
        r -> r.set(KafkaRecords.CE_TIME, "2026-01-01T00:00:00Z\u0000"),
        decoding("ce_time:"));
    one(
        c,
        "nul-schemaversion",
        "NUL in ce_schemaversion",
        r -> r.set(KafkaRecords.CE_SCHEMAVERSION, "3\u0000"),
        decoding("ce_schemaversion:"));
    one(
        c,
        "nul-specversion",
        "NUL in ce_specversion",
        r -> r.set(KafkaRecords.CE_SPECVERSION, "1.0\u0000"),
        decoding("unsupported CloudEvents spec version"));
    one(
        c,
        "nul-type",
        "NUL in ce_type (a type the consumer does not know)",
        r -> r.set(KafkaRecords.CE_TYPE, TYPE + "\u0000"),
        new Ignored("unknownTypes"));
    one(
        c,
        "nul-partitionkey",
        "NUL in ce_partitionkey, tenant 'evil'",
        r ->
            r.set(KafkaRecords.CE_PARTITIONKEY, "nul-partitionkey\u0000")
                .set(KafkaRecords.CE_TENANT, "evil"),
        tenant("not allowed"));
    one(
        c,
        "nul-key",
        "NUL in the record key (no ce_partitionkey), tenant 'evil'",
        r -> {
          r.remove(KafkaRecords.CE_PARTITIONKEY).set(KafkaRecords.CE_TENANT, "evil");
          r.key = utf8("nul-key\u0000");
        },
        tenant("not allowed"));
    one(
        c,
        "nul-header-name",
        "NUL in an application header's name, tenant 'evil'",
        r -> r.add("no\u0000te", utf8("x")).set(KafkaRecords.CE_TENANT, "evil"),
        tenant("not allowed"));
    one(
        c,
        "nul-header-value",
        "NUL in an application header's value, tenant 'evil'",
        r -> r.add("note", utf8("a\u0000b")).set(KafkaRecords.CE_TENANT, "evil"),
        tenant("not allowed"));
    one(
        c,
        "nul-correlationid",
        "NUL in ce_correlationid and ce_causationid, tenant 'evil'",
        r ->
            r.set(KafkaRecords.CE_CORRELATIONID, "c\u0000")
                .set(KafkaRecords.CE_CAUSATIONID, "d\u0000")
                .set(KafkaRecords.CE_TENANT, "evil"),
        tenant("not allowed"));
    one(
        c,
        "nul-header-name-valid",
        "NUL in an application header's name of a valid record",
        r -> r.add("no\u0000te", utf8("a\u0000b")),
        APPLIED);
    one(
        c,
        "nul-value",
        "a raw NUL byte inside a JSON string of the value",
        r -> r.value("{\"sku\":\"a\u0000b\",\"quantity\":1}"),
        decoding("cannot decode JSON"));
    one(
        c,
        "json-escaped-nul",
        "a \\u0000 escape in the JSON value",
        r -> r.value("{\"sku\":\"a\\u0000b\",\"quantity\":1}"),
        APPLIED);
    one(
        c,
        "json-lone-surrogate",
        "a lone surrogate \\uD800 escape in the JSON value",
        r -> r.value("{\"sku\":\"\\uD800\",\"quantity\":1}"),
        APPLIED);
  }

  private static Rec noKey() {
    Rec r = Rec.valid(null);
    return r;
  }

  private static void sameId(List<Case> c) {
    Rec original = Rec.valid("same-id");
    Rec again = original.copy();
    c.add(
        new Case(
            "same-id-same-payload",
            "the same id and payload twice (a redelivery)",
            List.of(original, again),
            Map.of(
                DeliveryGuarantee.AT_MOST_ONCE, new Applied(2),
                DeliveryGuarantee.AT_LEAST_ONCE, new Applied(2),
                DeliveryGuarantee.EFFECTIVELY_ONCE, new Ignored("duplicatesSuppressed"))));
    Rec first = Rec.valid("conflict");
    Rec tampered = first.copy().value("{\"sku\":\"tampered\",\"quantity\":999}");
    c.add(
        new Case(
            "same-id-other-payload",
            "the same id with a different payload",
            List.of(first, tampered),
            Map.of(
                DeliveryGuarantee.AT_MOST_ONCE,
                new Applied(2),
                DeliveryGuarantee.AT_LEAST_ONCE,
                new Applied(2),
                DeliveryGuarantee.EFFECTIVELY_ONCE,
                new DeadLettered(
                    Classification.CONFLICT,
                    MessageConflictException.class,
                    "different payload"))));
  }

  private static void one(List<Case> c, String name, String what, Consumer<Rec> spoil, End end) {
    Rec r = Rec.valid(name);
    spoil.accept(r);
    c.add(new Case(name, what, List.of(r), all(end)));
  }

  /** {@code s} as the inside of a JSON string (a key may hold a quote, a backslash or a NUL). */
  private static String json(String s) {
    StringBuilder b = new StringBuilder();
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') {
        b.append('\\').append(ch);
      } else if (ch < 0x20) {
        b.append(String.format("\\u%04x", (int) ch));
      } else {
        b.append(ch);
      }
    }
    return b.toString();
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) {
      n += p.length;
    }
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  private BadInputCorpus() {}
}
