package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The transactional relay against the idempotent relay, in one run ({@code ./postbox bench --only
 * txrelay}): drain throughput of one instance (defaults, retention 0) and the latency from the
 * business commit to the record being visible to a {@code read_committed} reader at 1,000 events/s
 * offered. The idempotent relay runs first in each pair.
 */
public final class TxRelayBench {

  private static final int RATE = 1_000;
  private static final int PARTITIONS = 6;

  private final BenchEnv env;
  private final BenchConfig config;

  public TxRelayBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Throughput of each, their ratio, then p50/p99 at 1k/s of each. */
  public List<Measurement> run() throws InterruptedException {
    drain(false, Math.min(config.relayEvents(), 10_000)); // warm-up, not reported
    drain(true, Math.min(config.relayEvents(), 10_000));
    int n = config.relayEvents();
    double idem = drain(false, n);
    double tx = drain(true, n);
    List<Measurement> out = new ArrayList<>();
    String note =
        n + " outbox rows drained by 1 relay instance (defaults, 64 lanes, retention 0): ";
    Measurement i =
        Measurement.of("idempotent_relay_events_per_s", idem, "events/s")
            .note(note + "idempotent producer");
    Measurement t =
        Measurement.of("transactional_relay_events_per_s", tx, "events/s")
            .note(note + "a transactional producer per lane, one transaction per lane per batch")
            .against(i);
    out.add(i);
    out.add(t);
    out.add(
        Measurement.of("transactional_vs_idempotent_relay", tx / idem, "x")
            .note("transactional_relay_events_per_s / idempotent_relay_events_per_s"));
    out.addAll(latency(false));
    out.addAll(latency(true));
    return out;
  }

  private KafkaRelayPublisher publisher(boolean transactional, String topic) {
    KafkaRelayPublisher.Builder b = KafkaRelayPublisher.builder(env.bootstrap());
    return (transactional ? b.transactional("bench-" + topic) : b).build();
  }

  private double drain(boolean transactional, int n) throws InterruptedException {
    Db db = env.database(transactional ? "txrelay" : "idrelay", 4);
    String topic = env.primedTopic(transactional ? "txrelay" : "idrelay", PARTITIONS);
    BenchEnv.seedOutbox(db, topic, n);
    try (Relay relay =
        Relay.builder(PostgresRelayStore.create(db.dataSource()), publisher(transactional, topic))
            .instanceId("bench-" + (transactional ? "tx" : "id"))
            .retention(Duration.ZERO)
            .build()) {
      long t0 = System.nanoTime();
      relay.start();
      BenchEnv.awaitCount(
          transactional ? "transactional relay" : "idempotent relay",
          () -> relay.stats().published(),
          n,
          Duration.ofSeconds(120));
      return Rate.since(t0, n);
    }
  }

  /** p50 and p99 from the business commit to visibility to a read_committed reader, at 1k/s. */
  private List<Measurement> latency(boolean transactional) throws InterruptedException {
    String name = transactional ? "transactional" : "idempotent";
    Db db = env.database(name + "_lat", 20);
    String topic = env.primedTopic(name + "-lat", PARTITIONS);
    Map<UUID, Long> committed = new ConcurrentHashMap<>();
    Map<UUID, Long> seen = new ConcurrentHashMap<>();
    Reader reader = new Reader(topic, seen);
    try (Relay relay =
        Relay.builder(PostgresRelayStore.create(db.dataSource()), publisher(transactional, topic))
            .instanceId("bench-lat-" + name)
            .build()) {
      relay.start();
      reader.start();
      WriteBench.BusinessTx tx =
          new WriteBench.BusinessTx(db, Optional.of(Outbox.postgres()), topic);
      LatencyBench.offer(tx, 500, Duration.ofSeconds(2), committed); // warm-up
      BenchEnv.awaitCount(name + " warm-up", seen::size, committed.size(), Duration.ofSeconds(60));
      committed.clear();
      seen.clear();
      long t0 = System.nanoTime();
      LatencyBench.offer(tx, RATE, config.latencyPhase(), committed);
      double achieved = Rate.since(t0, committed.size());
      BenchEnv.awaitCount(name, seen::size, committed.size(), Duration.ofSeconds(60));
      double[] ms =
          committed.entrySet().stream()
              .filter(e -> seen.containsKey(e.getKey()))
              .mapToDouble(e -> Math.max(0, seen.get(e.getKey()) - e.getValue()) / 1e6)
              .sorted()
              .toArray();
      String note =
          String.format(
              Locale.ROOT,
              "%s relay, offered %d/s, achieved %d tx/s (%d events): business commit to visible"
                  + " to a read_committed KafkaConsumer in this JVM",
              name,
              RATE,
              Math.round(achieved),
              ms.length);
      return List.of(
          Measurement.of(name + "_relay_1k_p50_ms", percentile(ms, 0.50), "ms").note(note),
          Measurement.of(name + "_relay_1k_p99_ms", percentile(ms, 0.99), "ms").note(note));
    } finally {
      reader.close();
    }
  }

  private static double percentile(double[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return OpenLoop.percentile(sorted, q * 100);
  }

  /** A read_committed reader that notes when each message id becomes visible. */
  private final class Reader implements AutoCloseable {
    private final String topic;
    private final Map<UUID, Long> seen;
    private volatile boolean running = true;
    private Thread thread;

    Reader(String topic, Map<UUID, Long> seen) {
      this.topic = topic;
      this.seen = seen;
    }

    void start() {
      Properties p = new Properties();
      p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
      p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 5);
      KafkaConsumer<byte[], byte[]> c =
          new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30))) {
        tps.add(new TopicPartition(topic, pi.partition()));
      }
      c.assign(tps);
      c.seekToEnd(tps);
      tps.forEach(c::position); // from here on, before any row is written
      thread =
          Thread.ofPlatform()
              .name("txrelay-bench-reader")
              .start(() -> {
                try (c) {
                  while (running) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(50))) {
                      Header h = r.headers().lastHeader(KafkaRecords.CE_ID);
                      if (h != null) {
                        seen.putIfAbsent(
                            UUID.fromString(new String(h.value(), StandardCharsets.UTF_8)),
                            System.nanoTime());
                      }
                    }
                  }
                }
              });
    }

    @Override
    public void close() throws InterruptedException {
      running = false;
      if (thread != null) {
        thread.join(10_000);
      }
    }
  }
}
