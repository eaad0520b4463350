package dev.postbox.spring;

import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.util.List;
import java.util.UUID;

/**
 * Publishes an order's message twice (the same id: a duplicate delivery), then a later order of the
 * same key, whose effect shows that both copies were handled (a key's messages are handled in
 * order). The payloads are the order ids as JSON strings.
 */
final class DeliveredTwice {

  private DeliveredTwice() {}

  /** The later order's id, for {@code orderId}. */
  static String later(String orderId) {
    return orderId + "-later";
  }

  /** Publishes to {@code topic}; returns the id of the order delivered twice. */
  static String publish(String bootstrapServers, String topic) throws Exception {
    String orderId = "o-" + UUID.randomUUID();
    Message m = order(topic, orderId, orderId);
    Message next = order(topic, orderId, later(orderId));
    try (KafkaRelayPublisher raw = KafkaRelayPublisher.builder(bootstrapServers).build()) {
      raw.publish(List.of(m, m, next));
    }
    return orderId;
  }

  private static Message order(String topic, String key, String orderId) {
    return Message.builder(topic, "order.placed")
        .key(key)
        .jsonPayload("\"" + orderId + "\"")
        .build();
  }
}
