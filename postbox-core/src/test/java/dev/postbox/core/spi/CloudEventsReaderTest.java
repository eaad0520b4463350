package dev.postbox.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.spi.CloudEventsBinding.Attribute;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.AbstractMap.SimpleEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The one reading of CloudEvents attributes, through a binding of its own (prefix {@code t_}, unit
 * "thing"): every failure, the fast and the text paths alike, the fallbacks and the trace rule.
 */
class CloudEventsReaderTest {

  static final UUID ID = UUID.fromString("0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7b");
  static final byte[] PAYLOAD = {1, 2, 3};
  static final byte[] NOT_UTF8 = {'a', (byte) 0xC3, 0x28};

  /** A received thing: headers in order, and what its transport adds. */
  record Thing(
      List<Map.Entry<String, Object>> headers,
      byte[] key,
      Instant timestamp,
      String contentTypeProperty) {

    Thing with(String name, Object value) {
      List<Map.Entry<String, Object>> h = new ArrayList<>(headers);
      h.add(new SimpleEntry<>(name, value));
      return new Thing(h, key, timestamp, contentTypeProperty);
    }

    Thing without(String name) {
      List<Map.Entry<String, Object>> h = new ArrayList<>(headers);
      h.removeIf(e -> e.getKey().equals(name));
      return new Thing(h, key, timestamp, contentTypeProperty);
    }

    Thing key(byte[] k) {
      return new Thing(headers, k, timestamp, contentTypeProperty);
    }

    Thing timestamp(Instant t) {
      return new Thing(headers, key, t, contentTypeProperty);
    }
  }

  /** Bytes for byte[] values (as on the wire), text as is; a value "throw" cannot be text. */
  static final class TestBinding implements CloudEventsBinding<Thing, Map.Entry<String, Object>> {
    private static final Map<String, Attribute> ATTRIBUTES = names();

    private static Map<String, Attribute> names() {
      Map<String, Attribute> all = new java.util.HashMap<>(Attribute.prefixed("t_"));
      all.put("ct", Attribute.DATACONTENTTYPE);
      return Map.copyOf(all);
    }

    @Override
    public String unit() {
      return "thing";
    }

    @Override
    public String describe(Thing t) {
      return "thing #7";
    }

    @Override
    public String headerName(Attribute a) {
      return a == Attribute.DATACONTENTTYPE ? "ct" : "t_" + a.attributeName();
    }

    @Override
    public Map<String, Attribute> attributes() {
      return ATTRIBUTES;
    }

    @Override
    public boolean reserved(String name) {
      return name.toLowerCase(java.util.Locale.ROOT).startsWith("t_") || name.equals("ct");
    }

    @Override
    public Iterable<Map.Entry<String, Object>> headers(Thing t) {
      return t.headers();
    }

    @Override
    public String name(Map.Entry<String, Object> h) {
      return h.getKey();
    }

    @Override
    public Object value(Map.Entry<String, Object> h) {
      if ("throw".equals(h.getValue())) {
        throw new IllegalArgumentException("not text");
      }
      return h.getValue();
    }

    @Override
    public Optional<String> contentType(Thing t) {
      return Optional.ofNullable(t.contentTypeProperty());
    }

    @Override
    public String topic(Thing t) {
      return "orders";
    }

    @Override
    public byte[] payload(Thing t) {
      return PAYLOAD;
    }

    @Override
    public Optional<byte[]> key(Thing t) {
      return Optional.ofNullable(t.key());
    }

    @Override
    public Optional<Instant> timestamp(Thing t) {
      return Optional.ofNullable(t.timestamp());
    }
  }

  static final TestBinding BINDING = new TestBinding();

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** A valid thing with every value as bytes (the fast paths). */
  static Thing valid() {
    return new Thing(List.of(), null, null, null)
        .with("t_specversion", utf8("1.0"))
        .with("t_id", utf8(ID.toString()))
        .with("t_source", utf8("/shop"))
        .with("t_type", utf8("order.placed"))
        .with("t_time", utf8("2024-05-01T10:15:30.5Z"))
        .with("t_schemaversion", utf8("4"))
        .with("ct", utf8("application/json"));
  }

  static Message read(Thing t) {
    return CloudEventsReader.read(BINDING, t);
  }

  static org.assertj.core.api.ObjectAssert<DecodingException> failure(Thing t, String reason) {
    return assertThatThrownBy(() -> read(t))
        .isInstanceOf(DecodingException.class)
        .hasMessageStartingWith("cannot read thing #7: " + reason)
        .asInstanceOf(type(DecodingException.class))
        .satisfies(e -> assertThat(e.rawBytes()).isEqualTo(PAYLOAD));
  }

  @Test
  void readsEveryAttributeFromBytesAndFromTextAlike() {
    Message m = read(valid());
    assertThat(m.id()).isEqualTo(ID);
    assertThat(m.topic()).isEqualTo("orders");
    assertThat(m.type()).isEqualTo("order.placed");
    assertThat(m.source()).isEqualTo("/shop");
    assertThat(m.schemaVersion()).isEqualTo(4);
    assertThat(m.occurredAt()).isEqualTo(Instant.parse("2024-05-01T10:15:30.5Z"));
    assertThat(m.payload().contentType()).isEqualTo("application/json");
    assertThat(m.payload().bytes()).isEqualTo(PAYLOAD);
    assertThat(m.key()).isEmpty();

    Thing text = new Thing(List.of(), null, null, null);
    for (Map.Entry<String, Object> e : valid().headers()) {
      text = text.with(e.getKey(), new String((byte[]) e.getValue(), StandardCharsets.UTF_8));
    }
    assertThat(read(text)).isEqualTo(m);
    // not the forms Postbox writes: the text parsers decide
    Thing other =
        valid()
            .with("t_id", ID.toString().toUpperCase(java.util.Locale.ROOT))
            .with("t_time", "2024-05-01T12:15:30.5+02:00");
    assertThat(read(other)).isEqualTo(m);
  }

  @Test
  void extensionsKeysHeadersAndTheLastValueWins() {
    Thing t =
        valid()
            .with("t_partitionkey", utf8("k-1"))
            .with("t_correlationid", "corr")
            .with("t_causationid", utf8("cause"))
            .with("t_tenant", utf8("acme"))
            .with("t_subject", utf8("ignored: unknown attribute"))
            .with("T_Other", utf8("reserved in any case"))
            .with("X-App", utf8("wert ✓"))
            .with("nothing", null)
            .with("t_type", utf8("order.changed"));
    Message m = read(t);
    assertThat(m.key()).contains("k-1");
    assertThat(m.correlationId()).contains("corr");
    assertThat(m.causationId()).contains("cause");
    assertThat(m.tenant()).contains("acme");
    assertThat(m.type()).isEqualTo("order.changed");
    assertThat(m.headers()).containsExactly(Map.entry("X-App", "wert ✓"));
    // a later header without a value: as if absent
    assertThat(read(t.with("t_tenant", null)).tenant()).isEmpty();
  }

  @Test
  void theTransportsKeyTimeAndContentTypeStandInWhenTheAttributesAreAbsent() {
    Thing t = valid().without("t_time").without("ct").key(utf8("record-key"));
    Instant at = Instant.parse("2024-05-01T00:00:00Z");
    Message m = read(t.timestamp(at));
    assertThat(m.occurredAt()).isEqualTo(at);
    assertThat(m.key()).contains("record-key");
    assertThat(m.payload().contentType()).isEqualTo(Payload.OCTET_STREAM);
    assertThat(read(t.timestamp(at).with("t_partitionkey", "")).key()).contains("record-key");
    assertThat(read(t.timestamp(at).key(new byte[0])).key()).isEmpty();
    Thing property = new Thing(valid().without("ct").headers(), null, null, "text/plain");
    assertThat(read(property).payload().contentType()).isEqualTo("text/plain");
  }

  @Test
  void theTracingExtensionStandsForThePlainHeadersOnlyWhenTheyAreAbsent() {
    String extension = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    String plain = "00-11111111111111111111111111111111-2222222222222222-01";
    Thing t = valid().with("t_traceparent", utf8(extension)).with("t_tracestate", utf8("a=1"));
    assertThat(read(t).headers())
        .containsEntry("traceparent", extension)
        .containsEntry("tracestate", "a=1");
    assertThat(read(t.with("traceparent", utf8(plain))).headers())
        .containsEntry("traceparent", plain)
        .doesNotContainKey("tracestate");
  }

  @Test
  void structuredModeIsRefused() {
    failure(
        valid().with("ct", utf8("application/cloudevents+json")),
        "structured content mode (content-type a value of 28 characters) is not supported;"
            + " expected binary mode");
  }

  @Test
  void theSpecVersionIsRequiredAndMustBeOnePointZero() {
    failure(
            valid().without("t_specversion"),
            "missing header t_specversion (not a CloudEvents binary thing)")
        .satisfies(e -> assertThat(e.messageId()).isEmpty());
    failure(
        valid().with("t_specversion", "0.3"),
        "unsupported CloudEvents spec version a value of 3 characters, expected 1.0");
  }

  @Test
  void theIdIsRequiredAndAUuid() {
    failure(valid().without("t_id"), "missing header t_id");
    failure(
            valid().with("t_id", utf8("not-a-uuid")),
            "t_id: a value of 10 characters is not a UUID")
        .satisfies(e -> assertThat(e.type()).contains("order.placed"));
    failure(valid().with("t_id", NOT_UTF8), "header t_id: not valid UTF-8");
  }

  @Test
  void theSchemaVersionIsAPositiveDecimal() {
    failure(
        valid().with("t_schemaversion", "01"),
        "t_schemaversion: a value of 2 characters is not a positive integer");
    failure(
        valid().with("t_schemaversion", "4294967296"),
        "t_schemaversion: a value of 10 characters is too large");
    assertThat(read(valid().without("t_schemaversion")).schemaVersion()).isEqualTo(1);
  }

  @Test
  void theTypeAndSourceAreRequiredAndValid() {
    failure(valid().without("t_type"), "missing header t_type")
        .satisfies(e -> assertThat(e.messageId()).contains(ID))
        .satisfies(e -> assertThat(e.schemaVersion()).hasValue(4));
    failure(valid().with("t_type", NOT_UTF8), "header t_type: not valid UTF-8")
        .satisfies(e -> assertThat(e.messageId()).contains(ID))
        .satisfies(e -> assertThat(e.type()).isEmpty());
    failure(valid().with("t_type", " "), "not a valid message: type must not be blank");
    failure(valid().without("t_source"), "missing header t_source");
    failure(valid().with("t_source", "order service"), "not a valid message:")
        .satisfies(e -> assertThat(e.getMessage()).contains("not a URI reference"));
  }

  @Test
  void theTimeIsRfc3339OrTheTransportsTimestamp() {
    failure(
        valid().with("t_time", "yesterday"),
        "t_time: a value of 9 characters is not an RFC 3339 timestamp");
    failure(valid().without("t_time"), "missing header t_time and the thing has no timestamp")
        .satisfies(e -> assertThat(e.messageId()).contains(ID))
        .satisfies(e -> assertThat(e.type()).contains("order.placed"))
        .satisfies(e -> assertThat(e.schemaVersion()).hasValue(4));
  }

  @Test
  void everyTextPlaceMustBeUtf8AndEveryValueText() {
    for (String name : new String[] {"t_source", "t_tenant", "t_tracestate", "ct", "app"}) {
      failure(valid().with(name, NOT_UTF8), "header " + name + ": not valid UTF-8");
    }
    failure(valid().without("t_partitionkey").key(NOT_UTF8), "thing key: not valid UTF-8");
    failure(valid().with("t_tenant", "throw"), "header t_tenant: not text");
    failure(valid().with("app", "throw"), "header app: not text");
  }

  @Test
  void hostileValuesAreNotInTheFailure() {
    String hostile = "x".repeat(10_000);
    assertThatThrownBy(() -> read(valid().with("t_id", hostile)))
        .isInstanceOf(DecodingException.class)
        .satisfies(e -> assertThat(e.getMessage()).hasSizeLessThan(400));
  }

  @Test
  void prefixedNamesEveryAttributeButTheContentType() {
    assertThat(Attribute.prefixed("a_", "b:"))
        .hasSize(2 * (Attribute.values().length - 1))
        .containsEntry("a_specversion", Attribute.SPECVERSION)
        .containsEntry("b:traceparent", Attribute.TRACEPARENT)
        .doesNotContainKey("a_datacontenttype");
  }
}
