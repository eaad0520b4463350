package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * Relay throughput (1 and 2 instances, ordered lanes) against the raw Kafka producer with the same
 * settings and the bare database drain ceiling (claim + delete of the same rows, no publish); the
 * peer relays ({@link PeerRelays}) are compared with it by the caller.
 */
public final class RelayBench {

  /** The relay's batch size; the drain ceiling claims in batches of the same size. */
  static final int BATCH = 2_000;

  private static final String CLAIM_AND_DELETE =
      "WITH c AS (SELECT position FROM postbox_outbox"
          + " WHERE published_at IS NULL AND failed_at IS NULL"
          + " ORDER BY position LIMIT ? FOR UPDATE SKIP LOCKED)"
          + " DELETE FROM postbox_outbox o USING c WHERE o.position = c.position"
          + " RETURNING o.position, o.lane, o.created_at, o.attempts, o.message_id, o.topic,"
          + " o.msg_key, o.type, o.schema_version, o.occurred_at, o.source, o.correlation_id,"
          + " o.causation_id, o.tenant, o.headers, o.content_type, o.payload";

  private final BenchEnv env;
  private final BenchConfig config;

  public RelayBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Warms up the relay path (JIT, connections, producer): a small drain, not reported. */
  public void warmUp() throws InterruptedException {
    drain(1, Math.min(config.relayEvents(), 10_000));
  }

  /**
   * Relay with {@code instances} instances: events/s from start to the last row marked; the median
   * of {@link #runs()} runs after a warm-up run.
   */
  public Measurement relay(int instances) throws Exception {
    String name =
        instances == 1 ? "relay_1_instance_events_per_s" : "relay_2_instances_events_per_s";
    return Repeated.median(name, "events/s", runs(), drainRun(instances));
  }

  /**
   * One drain of {@link BenchConfig#relayEvents()} seeded rows by {@code instances} relay instances
   * on this environment's broker, as a run of a repeated figure: events/s from start to the last
   * row published.
   */
  public Repeated.Once drainRun(int instances) {
    int n = config.relayEvents();
    return round -> {
      List<Long> shares = new ArrayList<>();
      StringBuilder cpu = new StringBuilder();
      double rate = drain(instances, n, shares, cpu);
      return new Repeated.Run(
          rate,
          n
              + " outbox rows drained, published (acks=all, idempotent) and deleted"
              + " (retention 0), per-key order kept across "
              + instances
              + " instance(s), default batch size"
              + (instances == 1 ? "" : "; published per instance in the last run " + shares)
              + "; CPU of the last run's drain "
              + cpu);
    };
  }

  /** Runs per repeated figure: 3 (1 in quick mode, where CI checks the report, not numbers). */
  private int runs() {
    return config.quick() ? 1 : 3;
  }

  private double drain(int instances, int n) throws InterruptedException {
    return drain(instances, n, new ArrayList<>(), new StringBuilder());
  }

  /**
   * {@link #drain(int, int)}, adding to {@code shares} how many rows each instance published and to
   * {@code cpu} the CPU time of this JVM, the broker and PostgreSQL during the drain, with the
   * cores they kept busy on average (the machine's cores are the limit when that nears their
   * count).
   */
  private double drain(int instances, int n, List<Long> shares, StringBuilder cpu)
      throws InterruptedException {
    Db db = env.database("relay" + instances, 4 * instances);
    String topic = env.primedTopic("relay", 6);
    BenchEnv.seedOutbox(db, topic, n);
    List<Relay> relays = new ArrayList<>();
    for (int i = 0; i < instances; i++) {
      relays.add(
          Relay.builder(
                  PostgresRelayStore.create(db.dataSource()),
                  KafkaRelayPublisher.builder(env.bootstrap()).build())
              .instanceId("bench-relay-" + i)
              .retention(Duration.ZERO)
              .build());
    }
    ProcessCpu processes = ProcessCpu.of(db.dataSource());
    Map<String, Double> before = processes.snapshot();
    long t0 = System.nanoTime();
    relays.forEach(Relay::start);
    try {
      BenchEnv.awaitCount(
          "relay",
          () -> relays.stream().mapToLong(r -> r.stats().published()).sum(),
          n,
          Duration.ofSeconds(60));
      double rate = Rate.since(t0, n);
      cpu.append(cpuBusy(before, processes.snapshot(), (System.nanoTime() - t0) / 1e6));
      relays.forEach(r -> shares.add(r.stats().published()));
      return rate;
    } finally {
      relays.forEach(Relay::close);
      db.dataSource().close(); // a new database per run: its pool is not needed after it
    }
  }

  /** "jvm 1,234 ms, broker ..., postgres ... in 2,000 ms: 1.85 cores busy" between snapshots. */
  static String cpuBusy(Map<String, Double> before, Map<String, Double> after, double wallMs) {
    StringBuilder out = new StringBuilder();
    double total = 0;
    for (Map.Entry<String, Double> e : after.entrySet()) {
      double ms = e.getValue() - before.getOrDefault(e.getKey(), 0.0);
      total += ms;
      out.append(e.getKey()).append(' ').append(String.format("%,.0f", ms)).append(" ms, ");
    }
    return out.append(
            String.format("in %,.0f ms of wall time: %.2f cores busy", wallMs, total / wallMs))
        .toString();
  }

  /**
   * The raw producer: the same records and producer settings, no database; the median of {@link
   * #runs()} runs after a warm-up run (a single run of it moved 2x between runs).
   */
  public Measurement rawProducer() throws Exception {
    return Repeated.median("raw_producer_events_per_s", "events/s", runs(), round -> rawOnce());
  }

  private Repeated.Run rawOnce() throws Exception {
    int n = config.relayEvents();
    String topic = env.primedTopic("raw", 6);
    List<Message> messages = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      messages.add(BenchEnv.message(topic, i));
    }
    try (KafkaProducer<byte[], byte[]> producer = env.producer()) {
      producer.partitionsFor(topic); // metadata outside the timed part, as a running relay has it
      long t0 = System.nanoTime();
      List<Future<?>> pending = new ArrayList<>(n);
      for (Message m : messages) {
        pending.add(producer.send(KafkaRecords.toRecord(m)));
      }
      Futures.awaitAll(pending);
      return new Repeated.Run(
          Rate.since(t0, n),
          "KafkaProducer, same records and settings as the relay's publisher, all in flight");
    }
  }

  /**
   * The bare database drain: claim + delete of the same rows in relay-sized batches; the median of
   * {@link #runs()} runs after a warm-up run.
   */
  public Measurement drainCeiling() throws Exception {
    return Repeated.median("drain_ceiling_events_per_s", "events/s", runs(), round -> drainOnce());
  }

  private Repeated.Run drainOnce() {
    int n = config.relayEvents();
    Db db = env.database("drain", 2);
    BenchEnv.seedOutbox(db, "bench.drain", n);
    long t0 = System.nanoTime();
    long drained = 0;
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(CLAIM_AND_DELETE)) {
      ps.setInt(1, BATCH);
      while (drained < n) {
        int rows = 0;
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            rs.getBytes("payload"); // the relay reads every row; so does the ceiling
            rs.getString("headers");
            rows++;
          }
        }
        if (rows == 0) {
          throw new IllegalStateException("drain ceiling: outbox empty after " + drained);
        }
        drained += rows;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("drain ceiling failed: " + e.getMessage(), e);
    } finally {
      db.dataSource().close();
    }
    return new Repeated.Run(
        Rate.since(t0, n),
        "one connection, SKIP LOCKED claim + DELETE ... RETURNING of "
            + BATCH
            + " rows per auto-commit statement, no publish");
  }

  /** The relay ratios: against the ceiling and the raw producer. */
  public static List<Measurement> ratios(
      Measurement relay1, Measurement ceiling, Measurement rawProducer) {
    return List.of(
        Measurement.of("relay_vs_drain_ceiling", relay1.value() / ceiling.value(), "x")
            .target(Target.atLeast(0.6))
            .note("relay_1_instance_events_per_s / drain_ceiling_events_per_s"),
        Measurement.of("relay_vs_raw_producer", relay1.value() / rawProducer.value(), "x")
            .note("relay_1_instance_events_per_s / raw_producer_events_per_s"));
  }
}
