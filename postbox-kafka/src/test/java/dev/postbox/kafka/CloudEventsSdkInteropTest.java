package dev.postbox.kafka;

import static dev.postbox.kafka.TestRecords.consumed;
import static dev.postbox.kafka.TestRecords.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import io.cloudevents.CloudEvent;
import io.cloudevents.SpecVersion;
import io.cloudevents.core.builder.CloudEventBuilder;
import io.cloudevents.kafka.CloudEventDeserializer;
import io.cloudevents.kafka.CloudEventSerializer;
import io.cloudevents.kafka.KafkaMessageFactory;
import java.net.URI;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/**
 * Interoperability with the CloudEvents Java SDK ({@code io.cloudevents:cloudevents-kafka}, test
 * scope only): what we write, the SDK reads; what the SDK writes in binary mode, we read.
 */
class CloudEventsSdkInteropTest {

  @Test
  void theSdkReadsOurRecords() {
    Message m = KafkaRecordsTest.full();
    ConsumerRecord<byte[], byte[]> r = consumed(KafkaRecords.toRecord(m));

    CloudEvent e = KafkaMessageFactory.createReader(r).toEvent();

    assertThat(e.getSpecVersion()).isEqualTo(SpecVersion.V1);
    assertThat(e.getId()).isEqualTo(m.id().toString());
    assertThat(e.getType()).isEqualTo("order.placed");
    assertThat(e.getSource()).isEqualTo(URI.create("/shop/orders"));
    assertThat(e.getTime()).isNotNull();
    assertThat(e.getTime().toInstant()).isEqualTo(m.occurredAt()); // nanoseconds included
    assertThat(e.getDataContentType()).isEqualTo("application/json; charset=utf-8");
    assertThat(e.getData()).isNotNull();
    assertThat(e.getData().toBytes()).isEqualTo(m.payload().bytes());
    assertThat(e.getExtensionNames())
        .containsExactlyInAnyOrder(
            "schemaversion",
            "partitionkey",
            "correlationid",
            "causationid",
            "tenant",
            "traceparent");
    // the trace context reaches the SDK as the distributed-tracing extension
    assertThat(e.getExtension("traceparent")).isEqualTo(m.header("traceparent").orElseThrow());
    assertThat(e.getExtension("schemaversion")).isEqualTo("3");
    assertThat(e.getExtension("partitionkey")).isEqualTo("Zürich-客户-42");
    assertThat(e.getExtension("correlationid")).isEqualTo("corr-1");
    assertThat(e.getExtension("causationid")).isEqualTo("cause-1");
    assertThat(e.getExtension("tenant")).isEqualTo("acme");
  }

  @Test
  void theSdkDeserializerReadsOurRecordsToo() {
    Message m = KafkaRecordsTest.minimal().toBuilder().key("k-1").jsonPayload("{}").build();
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);

    try (CloudEventDeserializer deserializer = new CloudEventDeserializer()) {
      deserializer.configure(Map.of(), false);
      CloudEvent e = deserializer.deserialize(r.topic(), r.headers(), r.value());

      assertThat(e.getId()).isEqualTo(m.id().toString());
      assertThat(e.getSource()).isEqualTo(URI.create(Message.DEFAULT_SOURCE));
      assertThat(e.getTime().toInstant()).isEqualTo(m.occurredAt());
      assertThat(e.getExtension("partitionkey")).isEqualTo("k-1");
      assertThat(e.getExtension("schemaversion")).isEqualTo("1");
      assertThat(e.getExtensionNames()).containsExactlyInAnyOrder("partitionkey", "schemaversion");
      assertThat(e.getData().toBytes()).isEqualTo(utf8("{}"));
    }
  }

  @Test
  void weReadRecordsTheSdkWroteInBinaryMode() {
    UUID id = UUID.fromString("0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7b");
    OffsetDateTime time =
        OffsetDateTime.of(2024, 5, 1, 12, 15, 30, 123_000_000, ZoneOffset.ofHours(2));
    CloudEvent event =
        CloudEventBuilder.v1()
            .withId(id.toString())
            .withSource(URI.create("urn:acme:billing"))
            .withType("invoice.issued")
            .withTime(time)
            .withDataContentType("application/json")
            .withData(utf8("{\"invoice\":\"i-9\"}"))
            .withExtension("partitionkey", "acct-7")
            .withExtension("schemaversion", 2) // an Integer extension
            .withExtension("correlationid", "corr-9")
            .withExtension("causationid", "cause-9")
            .withExtension("tenant", "globex")
            .withExtension("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            .withSubject("i-9")
            .build();

    ProducerRecord<byte[], byte[]> written =
        KafkaMessageFactory.createWriter("billing", utf8("acct-7")).writeBinary(event);
    Message m = KafkaRecords.fromRecord(consumed(written));

    assertThat(m.id()).isEqualTo(id);
    assertThat(m.topic()).isEqualTo("billing");
    assertThat(m.type()).isEqualTo("invoice.issued");
    assertThat(m.source()).isEqualTo("urn:acme:billing");
    assertThat(m.occurredAt()).isEqualTo(Instant.parse("2024-05-01T10:15:30.123Z"));
    assertThat(m.schemaVersion()).isEqualTo(2);
    assertThat(m.key()).contains("acct-7");
    assertThat(m.correlationId()).contains("corr-9");
    assertThat(m.causationId()).contains("cause-9");
    assertThat(m.tenant()).contains("globex");
    assertThat(m.payload()).isEqualTo(Payload.json("{\"invoice\":\"i-9\"}"));
    // ce_subject is a CloudEvents attribute we do not map: ignored, no application header; the
    // distributed-tracing extension becomes the message's trace context
    assertThat(m.headers())
        .containsOnly(
            Map.entry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  }

  @Test
  void weReadWhatTheSdkSerializerWritesWithoutOptionalAttributes() {
    UUID id = UUID.randomUUID();
    CloudEvent event =
        CloudEventBuilder.v1()
            .withId(id.toString())
            .withSource(URI.create("/legacy"))
            .withType("ping")
            .build(); // no time, no data, no content type, no extensions

    RecordHeaders headers = new RecordHeaders();
    byte[] value;
    try (CloudEventSerializer serializer = new CloudEventSerializer()) {
      serializer.configure(Map.of(), false); // binary mode is the default encoding
      value = serializer.serialize("pings", headers, event);
    }
    Message m = KafkaRecords.fromRecord(consumed("pings", null, headers, value));

    assertThat(m.id()).isEqualTo(id);
    assertThat(m.type()).isEqualTo("ping");
    assertThat(m.source()).isEqualTo("/legacy");
    assertThat(m.schemaVersion()).isEqualTo(1);
    assertThat(m.key()).isEmpty();
    assertThat(m.occurredAt()).isEqualTo(Instant.ofEpochMilli(TestRecords.TIMESTAMP));
    assertThat(m.payload()).isEqualTo(Payload.empty());
  }

  @Test
  void aRoundTripThroughTheSdkKeepsTheMessage() {
    Message m = KafkaRecordsTest.full();
    CloudEvent e = KafkaMessageFactory.createReader(consumed(KafkaRecords.toRecord(m))).toEvent();
    ProducerRecord<byte[], byte[]> rewritten =
        KafkaMessageFactory.createWriter(m.topic(), utf8(m.key().orElseThrow())).writeBinary(e);

    Message back = KafkaRecords.fromRecord(consumed(rewritten));

    // the SDK drops plain application headers (they are not CloudEvents attributes); the trace
    // context survives as the distributed-tracing extension
    Message withoutHeaders =
        new Message(
            m.id(),
            m.topic(),
            m.type(),
            m.schemaVersion(),
            m.key(),
            m.occurredAt(),
            m.source(),
            m.correlationId(),
            m.causationId(),
            m.tenant(),
            Map.of("traceparent", m.header("traceparent").orElseThrow()),
            m.payload());
    assertThat(back).isEqualTo(withoutHeaders);
  }
}
