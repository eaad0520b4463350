package dev.postbox.demo;

import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.DeliveryHistory;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The observer: a plain consumer of the orders topic (read_committed) that records what it sees and
 * when, then checks it against the delivery history (missing, order, duplicates) and gives the
 * commit-to-receive latencies.
 */
final class ShopObserver {

  private final PrintStream out;
  private final Duration timeout;
  private final DeliveryHistory history; // guarded by itself
  private final List<Observation> observations = new ArrayList<>(); // guarded by itself
  private final Map<UUID, Long> receiveNanos = new ConcurrentHashMap<>();
  private final Map<UUID, Integer> partitions = new ConcurrentHashMap<>(); // Kafka only

  ShopObserver(PrintStream out, Duration timeout, DeliveryHistory history) {
    this.out = out;
    this.timeout = timeout;
    this.history = history;
  }

  /** The consumer: reads the topic (read_committed) and records what it sees. */
  void consume(String bootstrap, String topic, AtomicBoolean running) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000);
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
        tps.add(new TopicPartition(topic, pi.partition()));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      while (running.get()) {
        var records = consumer.poll(Duration.ofMillis(100));
        long now = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : records) {
          Message m = KafkaRecords.fromRecord(r);
          partitions.putIfAbsent(m.id(), r.partition());
          observed(m, now);
        }
      }
    } catch (Exception e) {
      out.println("consumer failed: " + e);
    }
  }

  /** Records {@code m}, received at {@code now} (nano time); any transport's reader calls it. */
  void observed(Message m, long now) {
    // the seq header, not the payload: the poison messages' payloads may not even parse
    long seq = Long.parseLong(m.header("seq").orElseThrow());
    receiveNanos.putIfAbsent(m.id(), now);
    synchronized (observations) {
      observations.add(new Observation(m.key().orElseThrow(), seq, m.id().toString()));
    }
  }

  /** A message as the consumer saw it, in the order it saw them. */
  private record Observation(String key, long seq, String id) {}

  /**
   * Replays the observations into the history once every commit is recorded. (Checking each one as
   * it arrived raced with the writers: a writer records its order after the commit returns, and the
   * relay and consumer can be faster, which was then miscounted as an unexpected event.)
   */
  DeliveryHistory.Report checkObservations() {
    synchronized (history) {
      synchronized (observations) {
        for (Observation o : observations) {
          history.observed(o.key(), o.seq(), o.id());
        }
        observations.clear();
      }
      return history.report();
    }
  }

  void awaitConsumed(long distinct) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (receiveNanos.size() < distinct && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    if (receiveNanos.size() < distinct) {
      out.printf(
          "timed out after %s: %,d of %,d events consumed%n",
          timeout, receiveNanos.size(), distinct);
    }
  }

  /**
   * When ({@link System#nanoTime()}) the consumer first received one of the messages committed
   * after {@code since} ({@code commitNanos}); only those on {@code partition} of the Kafka topic
   * if one is given. Empty if none was received.
   */
  OptionalLong firstReceivedAfter(long since, Map<UUID, Long> commitNanos, OptionalInt partition) {
    return commitNanos.entrySet().stream()
        .filter(e -> e.getValue() > since && receiveNanos.containsKey(e.getKey()))
        .filter(e ->
            partition.isEmpty()
                || Integer.valueOf(partition.getAsInt()).equals(partitions.get(e.getKey())))
        .mapToLong(e -> receiveNanos.get(e.getKey()))
        .min();
  }

  double[] latenciesMillis(Map<UUID, Long> commitNanos) {
    double[] lat =
        commitNanos.entrySet().stream()
            .filter(e -> receiveNanos.containsKey(e.getKey()))
            .mapToDouble(e -> Math.max(0, receiveNanos.get(e.getKey()) - e.getValue()) / 1e6)
            .toArray();
    Arrays.sort(lat);
    return lat;
  }

  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = (int) Math.ceil(p / 100 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }
}
