package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The shop in a child JVM places {@value #ORDERS} orders (one transaction each) while its relay
 * publishes and its inventory listener reserves; it is killed with {@code kill -9} in the middle,
 * then started again without load. Every committed order is reserved exactly once; an order whose
 * transaction did not commit has neither row nor event. What reaches Kafka more than once (the
 * relay's batch in flight at the kill) is counted and printed.
 */
class PublisherKilledMidBatchTest {

  static final int ORDERS = 1500;

  @Test
  void killedMidBatchThenRestartedEveryCommittedOrderIsReservedOnce() throws Exception {
    try (PostboxTestContext ctx = PostboxTestContext.create("shop-kill")) {
      String topic = ctx.topic("shop.kill", 3);
      List<String> settings =
          List.of(
              "--spring.datasource.url=" + ctx.jdbcUrl(),
              "--postbox.kafka.bootstrap-servers=" + ctx.bootstrapServers(),
              "--shop.order-topic=" + topic,
              "--postbox.topics[" + topic + "].guarantee=effectively-once",
              // 4 handlers + the relay + headroom fit Boot's default pool of 10 (checked at start)
              "--postbox.topics[" + topic + "].concurrency=4",
              "--postbox.relay.poll-interval=200ms",
              "--management.endpoints.enabled-by-default=false");
      List<String> withLoad = new ArrayList<>(settings);
      withLoad.add("--shop.load.orders=" + ORDERS);
      JdbcTemplate db = new JdbcTemplate(ctx.dataSource());

      try (ChildJvm shop =
          ChildJvm.builder(ShopApplication.class).args(withLoad).jvmOptions("-Xmx384m").start()) {
        shop.awaitLogLine("placed 500", Duration.ofMinutes(3));
        await().atMost(Duration.ofMinutes(2)).until(() -> published(db) > 0);
        shop.kill();
      }
      long committed = db.queryForObject("SELECT count(*) FROM orders", Long.class);
      long eventsWritten = db.queryForObject("SELECT count(*) FROM postbox_outbox", Long.class);
      long publishedAtKill = published(db);
      long reservedAtKill = db.queryForObject("SELECT count(*) FROM reservations", Long.class);
      assertThat(committed).isBetween(500L, ORDERS - 1L);
      assertThat(eventsWritten).isEqualTo(committed);

      try (ChildJvm shop =
          ChildJvm.builder(ShopApplication.class).args(settings).jvmOptions("-Xmx384m").start()) {
        await()
            .atMost(Duration.ofMinutes(3))
            .until(() ->
                db.queryForObject(
                        "SELECT count(DISTINCT order_id) FROM reservations", Long.class)
                    == committed);
        await().atMost(Duration.ofMinutes(2)).until(() -> published(db) == committed);
        shop.terminate(Duration.ofSeconds(30));
      }

      long reservations = db.queryForObject("SELECT count(*) FROM reservations", Long.class);
      long orphans =
          db.queryForObject(
              "SELECT count(*) FROM reservations r WHERE NOT EXISTS"
                  + " (SELECT 1 FROM orders o WHERE o.id = r.order_id)",
              Long.class);
      long reserved = db.queryForObject("SELECT sum(reserved) FROM stock", Long.class);
      Map<UUID, Integer> onKafka = recordsPerMessageId(ctx.bootstrapServers(), topic);
      long kafkaRecords = onKafka.values().stream().mapToLong(Integer::longValue).sum();
      long kafkaDuplicates = kafkaRecords - onKafka.size();
      System.out.printf(
          "postbox kill -9 mid-batch: orders attempted %d, committed %d, events written %d,"
              + " published before the kill %d, reserved before the kill %d; after the restart:"
              + " records on Kafka %d (distinct %d, duplicates %d), reservations %d (duplicates"
              + " %d, lost %d, orphans %d)%n",
          ORDERS,
          committed,
          eventsWritten,
          publishedAtKill,
          reservedAtKill,
          kafkaRecords,
          onKafka.size(),
          kafkaDuplicates,
          reservations,
          reservations - committed,
          committed - reservations,
          orphans);
      assertThat(onKafka).hasSize((int) committed);
      assertThat(reservations).isEqualTo(committed);
      assertThat(orphans).isZero();
      assertThat(reserved).isEqualTo(committed);
    }
  }

  private static long published(JdbcTemplate db) {
    return db.queryForObject(
        "SELECT count(*) FROM postbox_outbox WHERE published_at IS NOT NULL", Long.class);
  }

  /** Reads the topic from the beginning to its end offsets: records per Postbox message id. */
  private static Map<UUID, Integer> recordsPerMessageId(String bootstrap, String topic) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Map<UUID, Integer> counts = new HashMap<>();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
      List<TopicPartition> partitions =
          consumer.partitionsFor(topic).stream()
              .map(i -> new TopicPartition(topic, i.partition()))
              .toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
      await()
          .atMost(Duration.ofMinutes(1))
          .until(() -> {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
              counts.merge(messageId(r), 1, Integer::sum);
            }
            return partitions.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp));
          });
    }
    return counts;
  }

  private static UUID messageId(ConsumerRecord<byte[], byte[]> r) {
    return KafkaRecords.fromRecord(r).id();
  }
}
