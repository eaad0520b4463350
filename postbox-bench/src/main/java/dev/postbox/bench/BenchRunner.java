package dev.postbox.bench;

import dev.postbox.bench.internal.BenchEnv;
import dev.postbox.bench.internal.ConsumerBench;
import dev.postbox.bench.internal.HeapBench;
import dev.postbox.bench.internal.LatencyBench;
import dev.postbox.bench.internal.PeerRelays;
import dev.postbox.bench.internal.RelayBench;
import dev.postbox.bench.internal.WriteBench;
import dev.postbox.core.consumer.Ordering;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Runs every benchmark of the issue in one process, side by side, on the test kit's infrastructure,
 * and returns the report. Progress goes to {@code log}. Not thread-safe: one run at a time.
 */
public final class BenchRunner {

  /** The benchmark groups, in the order they run. */
  public static final List<String> GROUPS =
      List.of("relay", "write", "consumer", "redis", "e2e", "keys", "heap");

  /**
   * Groups run only when asked for with {@code --only} (not in the default run nor CI's quick one):
   * {@code txrelay}, the transactional relay against the idempotent relay; {@code cdc}, the CDC
   * relay against Debezium on a pre-written backlog and at fixed rates (commit to broker-ack
   * latency); {@code rabbitmq}, the RabbitMQ relay and consumers against their peers, key-ordered
   * instances sharing the shards by lease against Spring AMQP's competing consumers and the shards'
   * hand-over times (needs a RabbitMQ installation); {@code admin}, the operations queries on
   * 100,000 dead letters; {@code batchrace}, only the race of our batch consumer against Spring
   * Kafka's batch listener that the {@code consumer} group runs too (for working on it); {@code
   * acklatency}, only the commit to broker-ack latency race of the {@code cdc} group (CDC relay,
   * Debezium, polling relay); {@code cdcwrite}, only the write path of the {@code cdc} group
   * (business-only, table outbox, emit-message outbox); {@code ackrounds}, the CDC relay and
   * Debezium in alternating rounds at the latency target's rates, each p99 the median of three
   * rounds; {@code inboxkeys}, PostgreSQL's CPU per message of an inbox batch claim with the inbox
   * keys of schema version 15 and of 16; {@code latency}, only the {@code e2e} group's first
   * figures (the polling relay to an at-least-once consumer at 1k, 5k and 20k/s), without the race
   * of pipelines; {@code capacity}, what each event costs PostgreSQL (WAL bytes of the business
   * write, the table and emit-message outboxes, the relay's delete or mark, the inbox's record,
   * purge and vacuum; table size and dead tuples per 10,000 rows), the capacity model's inputs;
   * {@code cluster}, the same work on a three-broker Kafka cluster (replication factor 3, {@code
   * min.insync.replicas=2}, {@code acks=all}) beside the single broker in one run: the relay with
   * 1, 2 and 4 instances, the effectively-once batch consumer, commit to broker acknowledgement at
   * 1,000/s (three more broker JVMs: too heavy for every run on 2 cores).
   */
  public static final List<String> OPT_IN_GROUPS =
      List.of(
          "txrelay",
          "cdc",
          "rabbitmq",
          "admin",
          "rr",
          "batchrace",
          "acklatency",
          "cdcwrite",
          "ackrounds",
          "inboxkeys",
          "latency",
          "capacity",
          "cluster");

  private final BenchConfig config;
  private final PrintStream log;
  private final Set<String> groups;
  private final List<Measurement> results = new ArrayList<>();

  /** A runner of every group. */
  public BenchRunner(BenchConfig config, PrintStream log) {
    this(config, log, Set.copyOf(GROUPS));
  }

  /** A runner of some {@link #GROUPS} only (for working on one benchmark). */
  public BenchRunner(BenchConfig config, PrintStream log, Set<String> groups) {
    this.config = Objects.requireNonNull(config, "config");
    this.log = Objects.requireNonNull(log, "log");
    this.groups = Set.copyOf(groups);
    if (!java.util.stream.Stream.concat(GROUPS.stream(), OPT_IN_GROUPS.stream())
        .toList()
        .containsAll(this.groups)) {
      throw new IllegalArgumentException(
          "unknown groups " + groups + "; known: " + GROUPS + " and " + OPT_IN_GROUPS);
    }
  }

  /** Runs everything; the report lists the measurements in the order they were taken. */
  public BenchReport run() throws Exception {
    java.util.Map<String, Double> machine = new java.util.LinkedHashMap<>();
    dev.postbox.bench.internal.MachineLoad.record("start", machine);
    try (BenchEnv env = BenchEnv.start()) {
      if (groups.contains("relay")) {
        relay(env);
      }
      if (groups.contains("write")) {
        write(env);
      }
      if (groups.contains("consumer")) {
        consumers(env);
      } else if (groups.contains("batchrace")) {
        ConsumerBench c = new ConsumerBench(env, config);
        c.prepare();
        ConsumerBench.BatchRace race = c.batchRace();
        race(race, record(race.ours()));
      }
      if (groups.contains("redis")) {
        new dev.postbox.bench.internal.RedisBench(env, config, log).run().forEach(this::record);
      }
      if (groups.contains("rabbitmq")) {
        new dev.postbox.bench.internal.RabbitBench(env, config, log).run().forEach(this::record);
      }
      if (groups.contains("e2e") || groups.contains("latency")) {
        latency(env);
      }
      if (groups.contains("e2e")) {
        new dev.postbox.bench.internal.E2eRace(env, config, log).run().forEach(this::record);
      }
      if (groups.contains("keys")) {
        keyOrder(env);
      }
      if (groups.contains("heap")) {
        new HeapBench(env, config).run().forEach(this::record);
      }
      if (groups.contains("txrelay")) {
        new dev.postbox.bench.internal.TxRelayBench(env, config).run().forEach(this::record);
      }
      if (groups.contains("cdc")) {
        new dev.postbox.bench.internal.CdcBench(env, config).run().forEach(this::record);
      }
      if (groups.contains("cdcwrite") && !groups.contains("cdc")) {
        new dev.postbox.bench.internal.CdcBench(env, config).writePath().forEach(this::record);
      }
      if (groups.contains("acklatency") && !groups.contains("cdc")) {
        new dev.postbox.bench.internal.CdcLatencyBench(env, config).run().forEach(this::record);
      }
      if (groups.contains("ackrounds")) {
        new dev.postbox.bench.internal.CdcLatencyRounds(env, config, log)
            .run()
            .forEach(this::record);
      }
      if (groups.contains("inboxkeys")) {
        new dev.postbox.bench.internal.InboxKeysBench(env, config).run().forEach(this::record);
      }
      if (groups.contains("capacity")) {
        new dev.postbox.bench.internal.CapacityBench(env, config).run().forEach(this::record);
      }
      if (groups.contains("cluster")) {
        new dev.postbox.bench.internal.ClusterBench(env, config, log).run().forEach(this::record);
      }
      if (groups.contains("admin")) {
        new dev.postbox.bench.internal.AdminBench(env, config, log).run().forEach(this::record);
      }
      if (groups.contains("rr")) {
        new dev.postbox.bench.internal.RrBench(env, config, log).run().forEach(this::record);
      }
    }
    dev.postbox.bench.internal.MachineLoad.record("end", machine);
    return new BenchReport(LocalDate.now(), cores(), memoryGb(), config.quick(), machine, results);
  }

  private void relay(BenchEnv env) throws Exception {
    RelayBench relay = new RelayBench(env, config);
    PeerRelays peers = new PeerRelays(env, config);
    relay.warmUp();
    Measurement ceiling = record(relay.drainCeiling());
    Measurement raw = record(relay.rawProducer());
    Measurement one = record(relay.relay(1).against(ceiling));
    record(relay.relay(2).against(ceiling));
    RelayBench.ratios(one, ceiling, raw).forEach(this::record);
    Measurement gruelbox = record(peers.gruelbox());
    Measurement debezium = record(peers.debezium());
    Measurement best = gruelbox.value() >= debezium.value() ? gruelbox : debezium;
    record(
        Measurement.of("relay_vs_best_peer", one.value() / best.value(), "x")
            .target(Target.atLeast(3))
            .note("relay_1_instance_events_per_s / " + best.name()));
  }

  private void write(BenchEnv env) throws Exception {
    List<Measurement> both = new WriteBench(env, config).run();
    Measurement plain = record(both.get(0));
    Measurement outbox = record(both.get(1).against(plain).target(Target.atLeast(0.8)));
    Measurement bare = record(both.get(2).against(plain));
    record(
        Measurement.of("outbox_write_vs_bare_row", outbox.value() / bare.value(), "x")
            .note("outbox_write_tx_per_s / bare_row_write_tx_per_s"));
  }

  private void consumers(BenchEnv env) throws Exception {
    ConsumerBench c = new ConsumerBench(env, config);
    c.prepare();
    Measurement alo = record(c.atLeastOnce());
    record(c.effectivelyOnceSingle().against(alo));
    Measurement eoPartition = record(c.effectivelyOncePartitionInbox());
    record(c.effectivelyOnceOffsets().against(eoPartition).target(Target.atLeast(1.0)));
    ConsumerBench.BatchRace race = c.batchRace();
    Measurement batch = record(race.ours().against(alo).target(Target.atLeast(0.8)));
    Measurement spring = record(c.springKafka());
    // kept under its published key, without a target: the consumer's target is against the batch
    // listener, the peer at its best (consumer_eo_batch_vs_spring_kafka_batch, in race())
    record(
        Measurement.of("consumer_eo_batch_vs_spring_kafka", batch.value() / spring.value(), "x")
            .note(
                "consumer_eo_batch_per_s / spring_kafka_jdbc_per_s: against Spring Kafka's"
                    + " per-record listener (a weaker configuration); the headline ratio is"
                    + " consumer_eo_batch_vs_spring_kafka_batch, against its batch listener"));
    race(race, batch);
  }

  /** The batch race's figures beside {@code batch}, our side's (already recorded). */
  private void race(ConsumerBench.BatchRace race, Measurement batch) {
    Measurement springBatch = record(race.spring());
    record(
        Measurement.of(
                "consumer_eo_batch_vs_spring_kafka_batch", batch.value() / springBatch.value(), "x")
            .target(Target.atLeast(1.5))
            .note(
                "consumer_eo_batch_per_s / spring_kafka_batch_tx_jdbc_per_s: against the peer's"
                    + " best (its batch listener, one transaction per poll batch)"));
    record(race.pairedRatio());
    Measurement oursSteady = record(race.oursSteady());
    Measurement springSteady = record(race.springSteady());
    record(
        Measurement.of(
                "consumer_eo_batch_vs_spring_kafka_batch_steady",
                oursSteady.value() / springSteady.value(),
                "x")
            .note(
                "consumer_eo_batch_steady_per_s / spring_kafka_batch_steady_per_s: the same runs,"
                    + " timed from each side's first applied record"));
    Measurement oursCpu = record(race.oursCpu());
    Measurement springCpu = record(race.springCpu());
    record(
        Measurement.of(
                "consumer_eo_batch_cpu_vs_spring_kafka_batch",
                oursCpu.value() / springCpu.value(),
                "x")
            .note(
                "consumer_eo_batch_cpu_us_per_msg / spring_kafka_batch_cpu_us_per_msg: CPU per"
                    + " message of all processes (this JVM, broker, PostgreSQL), ours over"
                    + " Spring's"));
    Measurement ceiling = record(race.ceiling());
    record(race.ceilingCpu());
    record(
        Measurement.of(
                "consumer_alo_batch_vs_spring_kafka_batch",
                ceiling.value() / springBatch.value(),
                "x")
            .note(
                "consumer_alo_batch_per_s / spring_kafka_batch_tx_jdbc_per_s: our batch consumer"
                    + " with no dedupe at all against Spring's effectively-once batch listener,"
                    + " the ceiling of consumer_eo_batch_vs_spring_kafka_batch on this machine"));
    record(
        Measurement.of("consumer_eo_batch_vs_alo_batch", batch.value() / ceiling.value(), "x")
            .note(
                "consumer_eo_batch_per_s / consumer_alo_batch_per_s: what the inbox's dedupe"
                    + " costs our batch consumer"));
  }

  private void latency(BenchEnv env) throws Exception {
    new LatencyBench(env, config).run().forEach(this::record);
  }

  private void keyOrder(BenchEnv env) throws Exception {
    ConsumerBench c = new ConsumerBench(env, config);
    Measurement partition = record(c.keyOrder(Ordering.PARTITION));
    record(c.keyOrder(Ordering.KEY).against(partition).target(Target.atLeast(50)));
    record(c.keyOrder(Ordering.UNORDERED).against(partition));
  }

  private Measurement record(Measurement m) {
    results.add(m);
    log.printf(
        "bench: %-36s %14s %s%s%n",
        m.name(),
        Measurement.format(m.value()),
        m.unit(),
        m.ratio().isPresent()
            ? "  ("
                + Measurement.format(m.ratio().getAsDouble())
                + "x "
                + m.baselineName().get()
                + ")"
            : "");
    return m;
  }

  private static int cores() {
    return Runtime.getRuntime().availableProcessors();
  }

  private static double memoryGb() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getTotalMemorySize() / (1024.0 * 1024 * 1024);
    }
    return 0;
  }
}
