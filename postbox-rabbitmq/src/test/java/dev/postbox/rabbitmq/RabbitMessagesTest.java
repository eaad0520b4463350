package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.impl.LongStringHelper;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The envelope mapping: round trip, the CloudEvents AMQP binding's names, strict reading. */
class RabbitMessagesTest {

  static final UUID ID = UUID.fromString("0190a0b1-c2d3-7e4f-8a1b-2c3d4e5f6a7b");
  static final Instant AT = Instant.parse("2024-05-01T10:15:30.123456789Z");
  static final Envelope ENVELOPE = new Envelope(7, false, "orders", "k");

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
        .payload(new Payload("{\"a\":1}".getBytes(StandardCharsets.UTF_8), "application/json"))
        .build();
  }

  /** What the broker hands a consumer: string header values arrive as LongStrings. */
  static AMQP.BasicProperties asReceived(AMQP.BasicProperties p) {
    Map<String, Object> h = new HashMap<>();
    p.getHeaders()
        .forEach((k, v) -> h.put(k, v instanceof String s ? LongStringHelper.asLongString(s) : v));
    return p.builder().headers(h).build();
  }

  @Test
  void roundTripKeepsEveryField() {
    Message m = full();
    AMQP.BasicProperties p = RabbitMessages.toProperties(m);
    Message back =
        RabbitMessages.fromDelivery("orders", ENVELOPE, asReceived(p), m.payload().bytes());
    assertThat(back).isEqualTo(m);
  }

  @Test
  void writesTheAmqpBindingNamesAndProperties() {
    AMQP.BasicProperties p = RabbitMessages.toProperties(full());
    assertThat(p.getHeaders())
        .containsEntry("cloudEvents_specversion", "1.0")
        .containsEntry("cloudEvents_id", ID.toString())
        .containsEntry("cloudEvents_type", "order.placed")
        .containsEntry("cloudEvents_partitionkey", "Zürich-客户-42")
        .containsEntry("cloudEvents_tenant", "acme")
        .containsEntry(
            "cloudEvents_traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    assertThat(p.getDeliveryMode()).isEqualTo(2);
    assertThat(p.getMessageId()).isEqualTo(ID.toString());
    assertThat(p.getType()).isEqualTo("order.placed");
    assertThat(p.getContentType()).isEqualTo("application/json");
    // the slot: CRC-32 of the key's UTF-8 bytes mod 256 (zlib.crc32 in Python gives the same)
    assertThat(RabbitMessages.routingKey(full())).isEqualTo("210");
    Message keyless = Message.builder("orders", "t").id(ID).occurredAt(AT).build();
    assertThat(RabbitMessages.routingKey(keyless)).isEqualTo("160");
  }

  @Test
  void readsTheOlderPrefixToo() {
    Map<String, Object> h = new HashMap<>();
    h.put("cloudEvents:specversion", "1.0");
    h.put("cloudEvents:id", ID.toString());
    h.put("cloudEvents:source", "/x");
    h.put("cloudEvents:type", "t");
    h.put("cloudEvents:time", "2024-05-01T12:15:30+02:00");
    Message m =
        RabbitMessages.fromDelivery(
            "orders", ENVELOPE, new AMQP.BasicProperties.Builder().headers(h).build(), new byte[0]);
    assertThat(m.id()).isEqualTo(ID);
    assertThat(m.occurredAt()).isEqualTo(Instant.parse("2024-05-01T10:15:30Z"));
    assertThat(m.payload().contentType()).isEqualTo(Payload.OCTET_STREAM);
  }

  @Test
  void badInputIsADecodingExceptionWithWhatWasRead() {
    AMQP.BasicProperties plain = new AMQP.BasicProperties.Builder().build();
    assertThatThrownBy(() -> RabbitMessages.fromDelivery("orders", ENVELOPE, plain, new byte[0]))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("missing header cloudEvents_specversion");

    Map<String, Object> h = new HashMap<>(RabbitMessages.toProperties(full()).getHeaders());
    h.put("cloudEvents_id", "not-a-uuid");
    AMQP.BasicProperties badId = new AMQP.BasicProperties.Builder().headers(h).build();
    assertThatThrownBy(() -> RabbitMessages.fromDelivery("orders", ENVELOPE, badId, new byte[0]))
        .isInstanceOf(DecodingException.class)
        .hasMessageContaining("cloudEvents_id");

    Map<String, Object> h2 = new HashMap<>(RabbitMessages.toProperties(full()).getHeaders());
    h2.put("cloudEvents_type", LongStringHelper.asLongString(new byte[] {(byte) 0xC3, 0x28}));
    AMQP.BasicProperties badUtf8 = new AMQP.BasicProperties.Builder().headers(h2).build();
    assertThatThrownBy(() -> RabbitMessages.fromDelivery("orders", ENVELOPE, badUtf8, new byte[0]))
        .isInstanceOfSatisfying(
            DecodingException.class, e -> assertThat(e.messageId()).contains(ID))
        .hasMessageContaining("UTF-8");
  }

  @Test
  void brokerTablesAreNotCopiedIntoMessageHeadersButXDeathIsShownAsText() {
    Map<String, Object> h = new HashMap<>(RabbitMessages.toProperties(full()).getHeaders());
    h.put(
        "x-death", List.of(Map.of("count", 2L, "reason", "expired", "queue", "s.orders.0.wait.1")));
    h.put("x-other-table", Map.of("a", 1L));
    h.put("x-delivery-count", 3L);
    Message m =
        RabbitMessages.fromDelivery(
            "orders", ENVELOPE, new AMQP.BasicProperties.Builder().headers(h).build(), new byte[0]);
    assertThat(m.headers())
        .doesNotContainKey("x-other-table")
        .containsEntry("x-delivery-count", "3")
        .containsEntry("x-death", "queue=s.orders.0.wait.1, reason=expired, count=2");
  }
}
