package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The same crash as samples/shop-spring-boot's PublisherKilledMidBatchTest, on the Modulith shop:
 * {@value #ORDERS} orders, {@code kill -9} after 500, restart without load (outstanding
 * publications republished on restart), then count what Kafka holds and what inventory applied.
 */
class PublisherKilledMidBatchTest {

  static final int ORDERS = 1500;
  static final String TOPIC = "shop.order-created";
  static final Pattern ORDER = Pattern.compile("\"order\"\\s*:\\s*\"([^\"]+)\"");

  @Test
  void killedMidBatchThenRestarted() throws Exception {
    // a broker of its own with a long start-up timeout (a loaded machine starts it slowly)
    try (PostboxTestContext ctx = PostboxTestContext.create("modulith-kill");
        KafkaBroker broker = KafkaBroker.builder().startupTimeout(Duration.ofMinutes(5)).build()) {
      broker.start();
      broker.createTopic(TOPIC, 3);
      String bootstrap = broker.bootstrapServers();
      List<String> settings =
          List.of(
              "--spring.datasource.url=" + ctx.jdbcUrl(),
              "--spring.kafka.bootstrap-servers=" + bootstrap);
      List<String> withLoad = new ArrayList<>(settings);
      withLoad.add("--shop.load.orders=" + ORDERS);
      JdbcTemplate db = new JdbcTemplate(ctx.dataSource());

      try (ChildJvm shop =
          ChildJvm.builder(ShopApplication.class)
              .args(withLoad)
              .jvmOptions("-Xmx384m")
              .log(java.nio.file.Path.of("target/shop-load.log"))
              .start()) {
        shop.awaitLogLine("placed 500", Duration.ofMinutes(6));
        shop.kill();
      }
      long committed = db.queryForObject("SELECT count(*) FROM orders", Long.class);
      long publications =
          db.queryForObject("SELECT count(*) FROM event_publication", Long.class);
      long incompleteAtKill =
          db.queryForObject(
              "SELECT count(*) FROM event_publication WHERE completion_date IS NULL", Long.class);
      long reservedAtKill = db.queryForObject("SELECT count(*) FROM reservations", Long.class);

      try (ChildJvm shop =
          ChildJvm.builder(ShopApplication.class)
              .args(settings)
              .jvmOptions("-Xmx384m")
              .log(java.nio.file.Path.of("target/shop-restart.log"))
              .start()) {
        await()
            .atMost(Duration.ofMinutes(3))
            .until(() ->
                db.queryForObject(
                        "SELECT count(*) FROM event_publication WHERE completion_date IS NULL",
                        Long.class)
                    == 0);
        await()
            .atMost(Duration.ofMinutes(3))
            .until(() -> consumerCaughtUp(bootstrap));
        shop.terminate(Duration.ofSeconds(30));
      }

      Map<String, Integer> onKafka = recordsPerOrder(bootstrap);
      long kafkaRecords = onKafka.values().stream().mapToLong(Integer::longValue).sum();
      long reservations = db.queryForObject("SELECT count(*) FROM reservations", Long.class);
      long distinctReserved =
          db.queryForObject("SELECT count(DISTINCT order_id) FROM reservations", Long.class);
      long reserved = db.queryForObject("SELECT sum(reserved) FROM stock", Long.class);
      System.out.printf(
          "modulith kill -9 mid-batch: orders attempted %d, committed %d, publications %d"
              + " (incomplete at the kill %d), reserved before the kill %d; after the restart:"
              + " records on Kafka %d (distinct orders %d, duplicates %d, lost %d), reservations"
              + " %d (duplicates %d, lost %d), stock reserved %d%n",
          ORDERS,
          committed,
          publications,
          incompleteAtKill,
          reservedAtKill,
          kafkaRecords,
          onKafka.size(),
          kafkaRecords - onKafka.size(),
          committed - onKafka.size(),
          reservations,
          reservations - distinctReserved,
          committed - distinctReserved,
          reserved);
      assertThat(publications).isEqualTo(committed);
    }
  }

  /** The inventory group's committed offsets have reached the end of every partition. */
  private static boolean consumerCaughtUp(String bootstrap) throws Exception {
    try (var admin =
        org.apache.kafka.clients.admin.Admin.create(
            Map.<String, Object>of("bootstrap.servers", bootstrap))) {
      var committed =
          admin.listConsumerGroupOffsets("inventory").partitionsToOffsetAndMetadata().get();
      try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap)) {
        List<TopicPartition> parts = partitions(c);
        Map<TopicPartition, Long> end = c.endOffsets(parts);
        return parts.stream()
            .allMatch(tp ->
                committed.get(tp) != null && committed.get(tp).offset() >= end.get(tp));
      }
    }
  }

  private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  private static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c) {
    return c.partitionsFor(TOPIC).stream().map(i -> new TopicPartition(TOPIC, i.partition())).toList();
  }

  /** Reads the topic from the beginning to its end offsets: records per order id. */
  private static Map<String, Integer> recordsPerOrder(String bootstrap) {
    Map<String, Integer> counts = new HashMap<>();
    try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
      List<TopicPartition> parts = partitions(consumer);
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      Map<TopicPartition, Long> end = consumer.endOffsets(parts);
      await()
          .atMost(Duration.ofMinutes(1))
          .until(() -> {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
              Matcher m = ORDER.matcher(new String(r.value(), StandardCharsets.UTF_8));
              if (m.find()) {
                counts.merge(m.group(1), 1, Integer::sum);
              }
            }
            return parts.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp));
          });
    }
    return counts;
  }
}
