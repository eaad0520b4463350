package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.example.shop.orders.OrderService;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.spring.PostboxSpringBootTest;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The shop as written (orders: JPA and the outbox in one {@code @Transactional} method; inventory:
 * an effectively-once listener calling a {@code @Transactional} service that writes with {@code
 * JdbcTemplate}) under duplicates and a crash: every event delivered twice, every first attempt
 * failing after its writes; exactly one reservation per order. Then the consumer's names: the
 * inbox records and the Kafka group are the listener's id, {@code inventory}, not derived from its
 * method. On the test kit through {@code @PostboxSpringBootTest}: a schema of its own, the shared
 * broker, the topic (its own name, 3 partitions) created from the delivery table.
 */
@PostboxSpringBootTest(
    partitions = 3,
    properties = {
      "shop.order-topic=" + ExactlyOnceTest.TOPIC,
      "postbox.topics[" + ExactlyOnceTest.TOPIC + "].guarantee=effectively-once",
      "postbox.topics[" + ExactlyOnceTest.TOPIC + "].concurrency=4",
      "postbox.topics[" + ExactlyOnceTest.TOPIC + "].max-retries=4",
      "postbox.topics[" + ExactlyOnceTest.TOPIC + "].backoff.initial=50ms",
      "postbox.relay.poll-interval=200ms"
    })
@Import(WarehouseTimingOutOnce.class)
class ExactlyOnceTest {

  static final String TOPIC = "shop.order-created.exactly-once";

  @Autowired OrderService orders;
  @Autowired JdbcTemplate db;
  @Autowired PostboxTestContext kit;

  @Test
  void eachOrderIsReservedOnceWhenEveryEventComesTwiceAndEveryFirstAttemptFailsAfterItsWrite()
      throws Exception {
    try (KafkaRelayPublisher raw = KafkaRelayPublisher.builder(kit.bootstrapServers()).build()) {
      DuplicatesAndACrash.run(orders, raw, db);
    }
  }

  @Test
  void theConsumerIsNamedByTheListenersIdNotItsMethod() throws Exception {
    String orderId = "o-" + UUID.randomUUID();
    orders.place(orderId, "c-" + UUID.randomUUID(), "sku-2", 1);
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            db.queryForObject(
                    "SELECT count(*) FROM reservations WHERE order_id = ?", Long.class, orderId)
                == 1);
    // Inventory.reserve is @PostboxListener(id = "inventory"): renaming the method (or the class)
    // keeps the inbox records' name and the consumer group, so nothing is consumed again
    assertThat(db.queryForList("SELECT DISTINCT consumer FROM postbox_inbox", String.class))
        .containsExactly("inventory");
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kit.bootstrapServers()))) {
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(() -> {
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin
                    .listConsumerGroupOffsets("inventory")
                    .partitionsToOffsetAndMetadata()
                    .get();
            Set<String> topics =
                committed.keySet().stream().map(TopicPartition::topic).collect(Collectors.toSet());
            assertThat(topics).contains(TOPIC);
          });
    }
  }
}
