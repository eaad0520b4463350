package dev.postbox.kafka;

import static dev.postbox.kafka.TestRecords.consumed;
import static dev.postbox.kafka.TestRecords.headers;
import static dev.postbox.kafka.TestRecords.text;
import static dev.postbox.kafka.TestRecords.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.PermanentMessageException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class KafkaRecordsTest {

  static final UUID ID = UUID.fromString("0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7b");
  static final Instant AT = Instant.parse("2024-05-01T10:15:30.123456789Z");
  static final byte[] VALUE = utf8("{\"orderId\":\"o-1\"}");

  static Message full() {
    return Message.builder("orders", "order.placed")
        .id(ID)
        .schemaVersion(3)
        .key("Zürich-客户-42")
        .occurredAt(AT)
        .source("/shop/orders")
        .correlationId("corr-1")
        .causationId("cause-1")
        .tenant("acme")
        .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        .header("X-Mixed-Case", "wert ✓")
        .header("empty", "")
        .payload(new Payload(VALUE, "application/json; charset=utf-8"))
        .build();
  }

  static Message minimal() {
    return Message.builder("orders", "order.placed").id(ID).occurredAt(AT).build();
  }

  static Map<String, String> headerMap(Iterable<Header> headers) {
    Map<String, String> m = new LinkedHashMap<>();
    for (Header h : headers) {
      m.put(h.key(), h.value() == null ? null : text(h.value()));
    }
    return m;
  }

  // ---- round trips ---------------------------------------------------------------------------

  @Test
  void roundTripsEveryField() {
    Message m = full();
    assertThat(KafkaRecords.fromRecord(consumed(KafkaRecords.toRecord(m)))).isEqualTo(m);
  }

  @Test
  void roundTripsAMessageWithoutOptionalFields() {
    Message m = minimal();
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);

    assertThat(r.key()).isNull();
    assertThat(r.value()).isNotNull().isEmpty(); // empty payload, not a tombstone
    assertThat(headerMap(r.headers()))
        .containsOnlyKeys(
            "ce_specversion",
            "ce_id",
            "ce_source",
            "ce_type",
            "ce_time",
            "ce_schemaversion",
            "content-type");
    assertThat(KafkaRecords.fromRecord(consumed(r))).isEqualTo(m);
  }

  @Test
  void roundTripsABinaryPayloadByteForByte() {
    byte[] all = new byte[512];
    for (int i = 0; i < all.length; i++) {
      all[i] = (byte) i;
    }
    Message m = minimal().toBuilder().payload(Payload.of(all)).key("k").build();

    Message back = KafkaRecords.fromRecord(consumed(KafkaRecords.toRecord(m)));

    assertThat(back).isEqualTo(m);
    assertThat(back.payload().bytes()).isEqualTo(all);
    assertThat(back.payload().contentType()).isEqualTo(Payload.OCTET_STREAM);
  }

  @Test
  void roundTripsTimesAtEveryPrecision() {
    for (String t :
        new String[] {
          "2024-05-01T10:15:30Z",
          "2024-05-01T10:15:30.100Z",
          "2024-05-01T10:15:30.000001Z",
          "1970-01-01T00:00:00Z",
          "0001-01-01T00:00:00Z",
          "9999-12-31T23:59:59.999999Z"
        }) {
      Message m = minimal().toBuilder().occurredAt(Instant.parse(t)).build();
      ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);
      assertThat(text(r.headers().lastHeader("ce_time").value())).isEqualTo(t);
      assertThat(KafkaRecords.fromRecord(consumed(r)).occurredAt()).isEqualTo(m.occurredAt());
    }
  }

  // ---- the record written --------------------------------------------------------------------

  @Test
  void writesTheCloudEventsBinaryLayout() {
    Message m = full();
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);

    assertThat(r.topic()).isEqualTo("orders");
    assertThat(r.partition()).isNull();
    assertThat(r.timestamp()).isNull();
    assertThat(r.key()).isEqualTo(utf8("Zürich-客户-42"));
    assertThat(r.value()).isEqualTo(VALUE);
    assertThat(headerMap(r.headers()))
        .containsExactlyInAnyOrderEntriesOf(
            Map.ofEntries(
                Map.entry("ce_specversion", "1.0"),
                Map.entry("ce_id", "0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7b"),
                Map.entry("ce_source", "/shop/orders"),
                Map.entry("ce_type", "order.placed"),
                Map.entry("ce_time", "2024-05-01T10:15:30.123456Z"),
                Map.entry("ce_schemaversion", "3"),
                Map.entry("ce_partitionkey", "Zürich-客户-42"),
                Map.entry("ce_correlationid", "corr-1"),
                Map.entry("ce_causationid", "cause-1"),
                Map.entry("ce_tenant", "acme"),
                Map.entry("content-type", "application/json; charset=utf-8"),
                Map.entry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                // the trace context again as the distributed-tracing extension, same value
                Map.entry(
                    "ce_traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                Map.entry("X-Mixed-Case", "wert ✓"),
                Map.entry("empty", "")));
  }

  @Test
  void headerNamesFollowTheBindingRules() {
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(full());
    List<String> names = new ArrayList<>();
    r.headers().forEach(h -> names.add(h.key()));

    assertThat(names).doesNotHaveDuplicates();
    assertThat(names.stream().filter(n -> n.toLowerCase().startsWith("ce_")))
        .hasSize(11)
        .allMatch(n -> n.matches("ce_[a-z0-9]{1,20}"), "ce_ + lower-case alphanumeric, <= 20");
    assertThat(names).contains("content-type").doesNotContain("ce_datacontenttype");
    // application headers keep their names and never enter the ce_/pb_ namespaces
    assertThat(names).contains("traceparent", "X-Mixed-Case", "empty");
    assertThat(names).noneMatch(n -> n.toLowerCase().startsWith("pb_"));
  }

  @Test
  void theRecordDoesNotShareBytesWithTheMessage() {
    Message m = full();
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);
    r.value()[0] = 'X';
    r.key()[0] = 'X';
    assertThat(m.payload().bytes()).isEqualTo(VALUE);
    assertThat(text(r.headers().lastHeader("ce_partitionkey").value())).startsWith("Z");
  }

  @Test
  void refusesTimesRfc3339CannotExpress() {
    Message m = minimal().toBuilder().occurredAt(Instant.parse("+10000-01-01T00:00:00Z")).build();
    assertThatThrownBy(() -> KafkaRecords.toRecord(m))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("RFC 3339");
  }

  // ---- reading: defaults and tolerance -------------------------------------------------------

  static Map<String, String> validHeaders() {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("ce_specversion", "1.0");
    h.put("ce_id", ID.toString());
    h.put("ce_source", "/shop");
    h.put("ce_type", "order.placed");
    h.put("ce_time", "2024-05-01T10:15:30Z");
    return h;
  }

  static ConsumerRecord<byte[], byte[]> record(Map<String, String> headers, byte[] key) {
    RecordHeaders h = new RecordHeaders();
    headers.forEach((k, v) -> h.add(k, v == null ? null : utf8(v)));
    return consumed("orders", key, h, VALUE);
  }

  @Test
  void theIdIsReadInAnyCaseAndTheLastCeIdHeaderWinsWhetherOrNotItIsValid() {
    String upper = ID.toString().toUpperCase(java.util.Locale.ROOT);
    Map<String, String> h = validHeaders();
    h.put("ce_id", upper);
    assertThat(KafkaRecords.fromRecord(record(h, null)).id()).isEqualTo(ID);

    Headers validThenInvalid = headers(validHeaders().entrySet());
    validThenInvalid.add("ce_id", utf8("order-17"));
    assertThatThrownBy(
            () -> KafkaRecords.fromRecord(consumed("orders", null, validThenInvalid, VALUE)))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("ce_id")
        .hasMessageContaining("is not a UUID");

    UUID other = UUID.fromString("0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7b");
    Headers invalidThenValid = headers(validHeaders().entrySet());
    invalidThenValid.remove("ce_id");
    invalidThenValid.add("ce_id", utf8("order-17"));
    invalidThenValid.add("ce_id", utf8(other.toString()));
    assertThat(KafkaRecords.fromRecord(consumed("orders", null, invalidThenValid, VALUE)).id())
        .isEqualTo(other);

    Headers notUtf8 = headers(validHeaders().entrySet());
    notUtf8.remove("ce_id");
    notUtf8.add("ce_id", new byte[] {(byte) 0xff, 'x'});
    assertThatThrownBy(() -> KafkaRecords.fromRecord(consumed("orders", null, notUtf8, VALUE)))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("header ce_id: not valid UTF-8");
  }

  @Test
  void readsTheRequiredMinimumWithDefaults() {
    ConsumerRecord<byte[], byte[]> r =
        consumed("orders", null, headers(validHeaders().entrySet()), null);

    Message m = KafkaRecords.fromRecord(r);

    assertThat(m.id()).isEqualTo(ID);
    assertThat(m.topic()).isEqualTo("orders");
    assertThat(m.type()).isEqualTo("order.placed");
    assertThat(m.source()).isEqualTo("/shop");
    assertThat(m.occurredAt()).isEqualTo(Instant.parse("2024-05-01T10:15:30Z"));
    assertThat(m.schemaVersion()).isEqualTo(1);
    assertThat(m.key()).isEmpty();
    assertThat(m.correlationId()).isEmpty();
    assertThat(m.causationId()).isEmpty();
    assertThat(m.tenant()).isEmpty();
    assertThat(m.headers()).isEmpty();
    assertThat(m.payload()).isEqualTo(Payload.empty()); // null value, no content-type
  }

  @Test
  void readsTimesWithOffsetsAndLowerCaseLetters() {
    Map<String, String> h = validHeaders();
    h.put("ce_time", "2024-05-01T12:15:30.5+02:00");
    assertThat(KafkaRecords.fromRecord(record(h, null)).occurredAt())
        .isEqualTo(Instant.parse("2024-05-01T10:15:30.5Z"));
    h.put("ce_time", "2024-05-01t10:15:30z");
    assertThat(KafkaRecords.fromRecord(record(h, null)).occurredAt())
        .isEqualTo(Instant.parse("2024-05-01T10:15:30Z"));
  }

  @Test
  void fallsBackToTheRecordTimestampWithoutCeTime() {
    Map<String, String> h = validHeaders();
    h.remove("ce_time");
    assertThat(KafkaRecords.fromRecord(record(h, null)).occurredAt())
        .isEqualTo(Instant.ofEpochMilli(TestRecords.TIMESTAMP));

    ConsumerRecord<byte[], byte[]> noTimestamp =
        consumed("orders", null, headers(h.entrySet()), VALUE, -1L);
    assertThatThrownBy(() -> KafkaRecords.fromRecord(noTimestamp))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("missing header ce_time");
  }

  @Test
  void ignoresUnknownExtensionsAndReservedNames() {
    Map<String, String> h = validHeaders();
    h.put("ce_subject", "s");
    h.put("ce_dataschema", "https://schemas.example/order");
    h.put("ce_somethingnew", "x");
    h.put("CE_ID", "not-a-uuid-but-not-ours-either"); // binding names are lower case
    h.put("pb_attempt", "3");
    h.put("Content-Type", "text/plain");
    h.put("app", "1");

    Message m = KafkaRecords.fromRecord(record(h, null));

    assertThat(m.id()).isEqualTo(ID);
    assertThat(m.headers()).containsExactly(Map.entry("app", "1"));
    assertThat(m.payload().contentType()).isEqualTo(Payload.OCTET_STREAM);
  }

  @Test
  void readsTheTraceContextFromTheDistributedTracingExtensionWhenThePlainHeaderIsAbsent() {
    Map<String, String> h = validHeaders();
    h.put("ce_traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    h.put("ce_tracestate", "vendor=1");

    assertThat(KafkaRecords.fromRecord(record(h, null)).headers())
        .containsOnly(
            Map.entry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            Map.entry("tracestate", "vendor=1"));

    h.put("traceparent", "00-11111111111111111111111111111111-2222222222222222-01");
    assertThat(KafkaRecords.fromRecord(record(h, null)).headers())
        .as("the plain W3C header wins; the extension is not mixed in")
        .containsOnly(
            Map.entry("traceparent", "00-11111111111111111111111111111111-2222222222222222-01"));
  }

  @Test
  void skipsApplicationHeadersWithNullValues() {
    Map<String, String> h = validHeaders();
    h.put("nothing", null);
    assertThat(KafkaRecords.fromRecord(record(h, null)).headers()).isEmpty();
  }

  @Test
  void theLastOfDuplicatedHeadersWins() {
    RecordHeaders h = new RecordHeaders();
    validHeaders().forEach((k, v) -> h.add(k, utf8(v)));
    h.add("ce_type", utf8("order.changed"));
    h.add("app", utf8("first"));
    h.add("app", utf8("second"));
    h.add("ce_partitionkey", utf8("k1"));
    h.add("ce_partitionkey", utf8("k2"));

    Message m = KafkaRecords.fromRecord(consumed("orders", null, h, VALUE));

    assertThat(m.type()).isEqualTo("order.changed");
    assertThat(m.headers()).containsEntry("app", "second");
    assertThat(m.key()).contains("k2");
  }

  @Test
  void theOrderingKeyComesFromCePartitionkeyThenTheRecordKey() {
    Map<String, String> h = validHeaders();
    assertThat(KafkaRecords.fromRecord(record(h, utf8("from-key"))).key()).contains("from-key");
    assertThat(KafkaRecords.fromRecord(record(h, new byte[0])).key()).isEmpty();
    h.put("ce_partitionkey", "from-header");
    assertThat(KafkaRecords.fromRecord(record(h, utf8("from-key"))).key()).contains("from-header");
    h.put("ce_partitionkey", "");
    assertThat(KafkaRecords.fromRecord(record(h, utf8("from-key"))).key()).contains("from-key");
  }

  // ---- reading: malformed input --------------------------------------------------------------

  static Stream<Arguments> malformed() {
    return Stream.of(
        bad("missing ce_id", "missing header ce_id", h -> h.remove("ce_id")),
        bad("missing ce_type", "missing header ce_type", h -> h.remove("ce_type")),
        bad("missing ce_source", "missing header ce_source", h -> h.remove("ce_source")),
        bad(
            "missing ce_specversion",
            "missing header ce_specversion",
            h -> h.remove("ce_specversion")),
        bad("null ce_id", "missing header ce_id", h -> h.put("ce_id", null)),
        bad("id not a UUID", "is not a UUID", h -> h.put("ce_id", "order-17")),
        bad("id short form", "is not a UUID", h -> h.put("ce_id", "1-2-3-4-5")),
        bad(
            "id with non-hex",
            "is not a UUID",
            h -> h.put("ce_id", "0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7g")),
        bad(
            "spec 0.3",
            "unsupported CloudEvents spec version",
            h -> h.put("ce_specversion", "0.3")),
        bad("schema version 0", "ce_schemaversion", h -> h.put("ce_schemaversion", "0")),
        bad("schema version -1", "ce_schemaversion", h -> h.put("ce_schemaversion", "-1")),
        bad("schema version +1", "ce_schemaversion", h -> h.put("ce_schemaversion", "+1")),
        bad("schema version 01", "ce_schemaversion", h -> h.put("ce_schemaversion", "01")),
        bad("schema version text", "ce_schemaversion", h -> h.put("ce_schemaversion", "two")),
        bad(
            "schema version huge",
            "ce_schemaversion",
            h -> h.put("ce_schemaversion", "4294967296")),
        bad("time text", "ce_time", h -> h.put("ce_time", "yesterday")),
        bad("time without offset", "ce_time", h -> h.put("ce_time", "2024-05-01T10:15:30")),
        bad("time without seconds", "ce_time", h -> h.put("ce_time", "2024-05-01T10:15Z")),
        bad("time month 13", "ce_time", h -> h.put("ce_time", "2024-13-01T10:15:30Z")),
        bad("time Feb 30", "ce_time", h -> h.put("ce_time", "2024-02-30T10:15:30Z")),
        bad("time epoch millis", "ce_time", h -> h.put("ce_time", "1714558530000")),
        bad("blank type", "type must not be blank", h -> h.put("ce_type", " ")),
        bad("source not a URI", "not a URI reference", h -> h.put("ce_source", "order service")),
        bad(
            "structured mode",
            "structured content mode",
            h -> h.put("content-type", "application/cloudevents+json; charset=UTF-8")),
        bad("blank content type", "contentType must not be blank", h -> h.put("content-type", "")));
  }

  interface Mutation {
    void apply(Map<String, String> headers);
  }

  static Arguments bad(String name, String reason, Mutation mutation) {
    return Arguments.of(name, reason, mutation);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("malformed")
  void malformedRecordsArePermanentDecodingExceptionsWithTheRawValue(
      String name, String reason, Mutation mutation) {
    Map<String, String> h = validHeaders();
    mutation.apply(h);
    ConsumerRecord<byte[], byte[]> r = record(h, utf8("key"));

    assertThatThrownBy(() -> KafkaRecords.fromRecord(r))
        .isInstanceOf(PermanentMessageException.class)
        .hasMessageContaining(reason)
        .hasMessageContaining("orders-3@42")
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.rawBytes()).isEqualTo(VALUE));
  }

  @Test
  void invalidUtf8IsRejectedInEveryTextPlace() {
    byte[] invalid = {'a', (byte) 0xC3, 0x28}; // broken two-byte sequence
    for (String name : new String[] {"ce_type", "ce_source", "ce_tenant", "content-type", "app"}) {
      RecordHeaders h = new RecordHeaders();
      validHeaders().forEach((k, v) -> h.add(k, utf8(v)));
      h.add(name, invalid);
      assertThatThrownBy(() -> KafkaRecords.fromRecord(consumed("orders", null, h, VALUE)))
          .as(name)
          .isInstanceOf(DecodingException.class)
          .hasMessageContaining("header " + name + ": not valid UTF-8");
    }
    RecordHeaders h = new RecordHeaders();
    validHeaders().forEach((k, v) -> h.add(k, utf8(v)));
    assertThatThrownBy(() -> KafkaRecords.fromRecord(consumed("orders", invalid, h, VALUE)))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("record key: not valid UTF-8");
  }

  @Test
  void theExceptionCarriesWhatWasReadBeforeTheFailure() {
    Map<String, String> h = validHeaders();
    h.put("ce_schemaversion", "4");
    h.put("ce_time", "soon");
    byte[] garbage = {(byte) 0xFF, 0, 1, 2};
    RecordHeaders headers = new RecordHeaders();
    h.forEach((k, v) -> headers.add(k, utf8(v)));

    assertThatThrownBy(() -> KafkaRecords.fromRecord(consumed("orders", null, headers, garbage)))
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.messageId()).contains(ID))
        .satisfies(e -> assertThat(e.type()).contains("order.placed"))
        .satisfies(e -> assertThat(e.schemaVersion()).hasValue(4))
        .satisfies(e -> assertThat(e.rawBytes()).isEqualTo(garbage));
  }

  @Test
  void aRecordWithoutAnyHeadersIsRejectedNotCrashedOn() {
    ConsumerRecord<byte[], byte[]> r = consumed("orders", null, new RecordHeaders(), null);
    assertThatThrownBy(() -> KafkaRecords.fromRecord(r))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("not a CloudEvents binary record")
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.rawBytes()).isEmpty())
        .satisfies(e -> assertThat(e.messageId()).isEmpty());
  }

  @Test
  void longHostileValuesAreCutInTheExceptionMessage() {
    Map<String, String> h = validHeaders();
    h.put("ce_id", "x".repeat(10_000));
    assertThatThrownBy(() -> KafkaRecords.fromRecord(record(h, null)))
        .isInstanceOf(DecodingException.class)
        .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(400));
  }
}
