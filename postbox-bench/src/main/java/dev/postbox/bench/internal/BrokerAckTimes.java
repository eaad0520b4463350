package dev.postbox.bench.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * When the broker appended each message of a topic created with {@code
 * message.timestamp.type=LogAppendTime}: the broker stamps a record with its own wall clock as it
 * appends it to the partition log, which on the test kit's one broker (replication factor 1) is
 * when an {@code acks=all} send is acknowledged, less the response's trip back. Messages are told
 * apart by their {@code ce_id} header (the relay's CloudEvents id; the Debezium peer sets it from
 * the row's {@code message_id}). Read after the run, so reading costs the streamers no CPU.
 */
final class BrokerAckTimes {

  /** The topic configuration that makes the broker stamp each record at its append. */
  static final Map<String, String> TOPIC_CONFIG = Map.of("message.timestamp.type", "LogAppendTime");

  /**
   * Where in its millisecond a stamp is read: the broker truncates its clock to the millisecond, so
   * the true append instant lies in {@code [stamp, stamp + 1)} ms and its middle is the unbiased
   * reading (off by at most half a millisecond either way).
   */
  static final double STAMP_MIDPOINT_MS = 0.5;

  private BrokerAckTimes() {}

  /**
   * Waits until the partitions of {@code topic} hold at least {@code n} records (end offsets;
   * cheap, no fetch), failing after {@code noProgress} without a new one.
   */
  static void awaitRecords(String bootstrap, String topic, long n, Duration noProgress)
      throws InterruptedException {
    try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap)) {
      List<TopicPartition> parts = partitions(c, topic);
      BenchEnv.awaitCount(
          "records on " + topic,
          () -> c.endOffsets(parts).values().stream().mapToLong(Long::longValue).sum(),
          n,
          noProgress);
    }
  }

  /**
   * The broker's append instant (epoch ms) of the first record of each of {@code ids} on {@code
   * topic}, reading from the beginning until every id was seen, failing after {@code noProgress}
   * without a new one.
   */
  static Map<UUID, Long> read(String bootstrap, String topic, Set<UUID> ids, Duration noProgress) {
    Map<UUID, Long> appended = new HashMap<>();
    try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap)) {
      List<TopicPartition> parts = partitions(c, topic);
      c.assign(parts);
      c.seekToBeginning(parts);
      long lastNew = System.nanoTime();
      while (appended.size() < ids.size()) {
        int before = appended.size();
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          Header h = r.headers().lastHeader("ce_id");
          if (h == null) {
            continue; // a probe
          }
          UUID id = UUID.fromString(new String(h.value(), StandardCharsets.UTF_8));
          if (r.timestampType() != TimestampType.LOG_APPEND_TIME) {
            throw new IllegalStateException(topic + " is not stamped at append: " + r);
          }
          if (ids.contains(id)) {
            appended.putIfAbsent(id, r.timestamp());
          }
        }
        if (appended.size() > before) {
          lastNew = System.nanoTime();
        } else if (System.nanoTime() - lastNew > noProgress.toNanos()) {
          throw new IllegalStateException(
              topic
                  + ": "
                  + appended.size()
                  + " of "
                  + ids.size()
                  + " messages after "
                  + noProgress);
        }
      }
    }
    return appended;
  }

  private static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c, String topic) {
    return c.partitionsFor(topic).stream()
        .map(p -> new TopicPartition(topic, p.partition()))
        .toList();
  }

  private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
    Map<String, Object> p = new HashMap<>();
    p.put("bootstrap.servers", bootstrap);
    p.put("enable.auto.commit", false);
    p.put("auto.offset.reset", "earliest");
    p.put("max.poll.records", 5_000);
    return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }
}
