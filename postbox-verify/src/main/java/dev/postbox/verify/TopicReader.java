package dev.postbox.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.kafka.KafkaRecords;
import java.nio.charset.StandardCharsets;
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
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the campaign's topic from the beginning, all the time, and keeps every record's partition,
 * offset, message id, key and sequence number (from the payload), in offset order per partition.
 *
 * <p>Thread-safe.
 */
final class TopicReader implements PublishedRecords, AutoCloseable {

  /**
   * One record on the topic; {@code lane} and {@code epoch} from the relay's {@code pb_relay_lane}
   * and {@code pb_relay_epoch} headers, -1 when absent.
   */
  record Published(
      int partition,
      long offset,
      UUID id,
      String key,
      long seq,
      long timestamp,
      int lane,
      long epoch) {
    Published(int partition, long offset, UUID id, String key, long seq, long timestamp) {
      this(partition, offset, id, key, seq, timestamp, -1, -1);
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private final KafkaConsumer<byte[], byte[]> consumer;
  private final Map<Integer, List<Published>> byPartition = new HashMap<>();
  // next offset to read per partition (past transaction markers too, which hold no record)
  private final Map<Integer, Long> positions = new HashMap<>();
  private final Thread thread;
  private volatile boolean running = true;
  private int undecodable;

  TopicReader(String bootstrap, String topic, int partitions) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, "verify-topic-reader");
    // as the consumers read: with the transactional relay, aborted records are not the topic's
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    consumer = new KafkaConsumer<>(p);
    List<TopicPartition> tps = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      tps.add(new TopicPartition(topic, i));
      byPartition.put(i, new ArrayList<>());
    }
    consumer.assign(tps);
    consumer.seekToBeginning(tps);
    thread = Thread.ofPlatform().name("topic-reader").daemon(true).start(this::run);
  }

  private void run() {
    while (running) {
      try {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
          add(r);
        }
        Map<Integer, Long> now = new HashMap<>();
        for (TopicPartition tp : consumer.assignment()) {
          now.put(tp.partition(), consumer.position(tp, Duration.ofSeconds(5)));
        }
        synchronized (this) {
          positions.putAll(now);
        }
      } catch (org.apache.kafka.common.errors.WakeupException e) {
        return;
      } catch (RuntimeException e) {
        // broker restarting: poll again
      }
    }
  }

  private void add(ConsumerRecord<byte[], byte[]> r) {
    Header h = r.headers().lastHeader(KafkaRecords.CE_ID);
    UUID id = null;
    String key = null;
    long seq = -1;
    try {
      id = UUID.fromString(new String(h.value(), StandardCharsets.UTF_8));
      JsonNode body = JSON.readTree(r.value());
      key = body.get("key").asText();
      seq = body.get("seq").asLong();
    } catch (Exception e) {
      synchronized (this) {
        undecodable++;
      }
    }
    Published p =
        new Published(
            r.partition(),
            r.offset(),
            id,
            key,
            seq,
            r.timestamp(),
            (int) number(r, KafkaRecords.PB_RELAY_LANE),
            number(r, KafkaRecords.PB_RELAY_EPOCH));
    synchronized (this) {
      byPartition.get(r.partition()).add(p);
    }
  }

  private static long number(ConsumerRecord<byte[], byte[]> r, String header) {
    Header h = r.headers().lastHeader(header);
    try {
      return h == null ? -1 : Long.parseLong(new String(h.value(), StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * How far (next offset) the reader got in {@code partition}: past its last record, and past the
   * transaction markers after it.
   */
  public synchronized long position(int partition) {
    return Math.max(lastRecordEnd(partition), positions.getOrDefault(partition, 0L));
  }

  /** The offset after the last record read in {@code partition} (0 for none). */
  public synchronized long lastRecordEnd(int partition) {
    List<Published> l = byPartition.get(partition);
    return l.isEmpty() ? 0 : l.get(l.size() - 1).offset() + 1;
  }

  /** The records of {@code partition} with offsets in [from, to). */
  @Override
  public synchronized List<Published> range(int partition, long from, long to) {
    List<Published> out = new ArrayList<>();
    for (Published p : byPartition.get(partition)) {
      if (p.offset() >= from && p.offset() < to) {
        out.add(p);
      }
    }
    return out;
  }

  /** Every record read so far, per partition in offset order. */
  @Override
  public synchronized Map<Integer, List<Published>> all() {
    Map<Integer, List<Published>> copy = new HashMap<>();
    byPartition.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    return copy;
  }

  synchronized int undecodable() {
    return undecodable;
  }

  /** Waits until the reader has read up to {@code ends} (partition -> end offset). */
  @Override
  public boolean awaitPositions(Map<Integer, Long> ends, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      boolean done = true;
      for (Map.Entry<Integer, Long> e : ends.entrySet()) {
        if (position(e.getKey()) < e.getValue()) {
          done = false;
        }
      }
      if (done) {
        return true;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }

  @Override
  public void close() {
    running = false;
    consumer.wakeup();
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    consumer.close(Duration.ofSeconds(2));
  }
}
