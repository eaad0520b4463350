package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.bench.internal.E2eFigures.Phase;
import dev.postbox.jdbc.Outbox;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * End to end, not hop by hop (issue 44): from the business commit to the consumer's effect
 * committed, five pipelines raced on the same writers and database, in rounds.
 *
 * <ul>
 *   <li>{@code cdc}: Postbox's CDC relay to Kafka, then our {@code EFFECTIVELY_ONCE} batch consumer
 *       (inbox rows and effects in one transaction per batch);
 *   <li>{@code polling}: Postbox's polling relay, then the same consumer;
 *   <li>{@code debezium_spring}: Debezium embedded in its low-latency configuration, then Spring
 *       Kafka's batch listener with the same dedupe row and effect in one transaction per batch;
 *   <li>{@code rabbit_polling}: Postbox's polling relay with publisher confirms to RabbitMQ's
 *       quorum shard queues, then our {@code EFFECTIVELY_ONCE} consumer in batches ({@code
 *       RabbitSubscriber}, key order);
 *   <li>{@code rabbit_spring}: the same relay and queues, then Spring AMQP's batch listener ({@code
 *       SimpleMessageListenerContainer}, one per shard queue) with the same dedupe row and effect
 *       in one transaction per batch, acking after the commit.
 * </ul>
 *
 * <p>The RabbitMQ pipelines need a RabbitMQ ({@link RabbitNode}: this machine's {@code
 * rabbitmq-server}, a node started for each of their runs, or an external broker); without one they
 * are skipped with one line saying why, and the Kafka pipelines run alone. Each Postbox pipeline's
 * p99 is set against its peer on the same broker ({@link E2eReport#PEERS}).
 *
 * <p><b>Method.</b> Each pipeline runs alone, started afresh on its own schema (and slot) and its
 * own topic (Kafka: stamped by the broker at append, {@code LogAppendTime}; RabbitMQ: the relay's
 * publisher confirms, {@link RelayConfirmTimes}); the order rotates from round to round so that no
 * pipeline always runs first or last. The open-loop writers of {@link LatencyBench#offer} record
 * each commit's wall-clock instant; the consumers' receipt (Kafka: the poll, {@link
 * E2eInterceptor}; Spring AMQP: the container taking the message; our RabbitMQ consumer: not
 * measured, {@link E2eRabbitConsumers#OURS_HOW}) and effect commit ({@link E2eConsumers}) are read
 * from the same clock. Each pipeline gets a warm-up at 1,000/s, then the offered rates, each waited
 * out (every effect committed) before the next. In the first round, before its rates, the first
 * pipeline's writers run back to back for a phase (the writers' maximum with it streaming and
 * consuming); half and a quarter of it are rates of every pipeline. Each figure is the median of
 * the rounds, the worst round beside it ({@link E2eReport}).
 */
public final class E2eRace {

  /** Rounds in full mode (one in quick mode). */
  static final int ROUNDS = 3;

  /** The fixed offered rates in full mode, events/s; quick mode offers 1,000/s only. */
  static final int[] FULL_RATES = {1_000, 2_000, 5_000};

  private static final int[] QUICK_RATES = {1_000};
  private static final Duration NO_PROGRESS = Duration.ofSeconds(60);
  private static final Duration WARM_UP = Duration.ofSeconds(3);

  private final BenchEnv env;
  private final BenchConfig config;
  private final PrintStream log;
  private final List<E2ePipeline> pipelines;
  private final Optional<String> rabbitSkipped;

  public E2eRace(BenchEnv env, BenchConfig config, PrintStream log) {
    this.env = env;
    this.config = config;
    this.log = log;
    List<E2ePipeline> all =
        new ArrayList<>(
            List.of(
                new E2eCdcPipeline(),
                new E2ePollingPipeline(),
                new E2eDebeziumSpringPipeline(config)));
    rabbitSkipped = RabbitNode.unavailable();
    if (rabbitSkipped.isEmpty()) {
      all.add(new E2eRabbitPollingPipeline());
      all.add(new E2eRabbitSpringPipeline());
    }
    this.pipelines = List.copyOf(all);
  }

  /** The writers' maximum, then every pipeline's figures per rate, then the ratios. */
  public List<Measurement> run() throws Exception {
    rabbitSkipped.ifPresent(
        why -> log.println("bench: e2e: rabbit_polling and rabbit_spring skipped: " + why));
    int rounds = config.quick() ? 1 : ROUNDS;
    Map<String, List<List<Phase>>> byPipeline = new LinkedHashMap<>();
    pipelines.forEach(p -> byPipeline.put(p.key(), new ArrayList<>()));
    double writerMax = 0;
    for (int r = 0; r < rounds; r++) {
      for (int j = 0; j < pipelines.size(); j++) {
        E2ePipeline p = pipelines.get((j + r) % pipelines.size());
        Run run = run(p, r + 1, writerMax);
        writerMax = run.writerMax();
        byPipeline.get(p.key()).add(run.phases());
        log.printf(
            Locale.ROOT, "bench: e2e round %d, %s: %s%n", r + 1, p.key(), p99s(run.phases()));
      }
    }
    Map<String, String> how = new LinkedHashMap<>();
    Map<String, List<String>> hops = new LinkedHashMap<>();
    pipelines.forEach(p -> how.put(p.key(), p.how()));
    pipelines.forEach(p -> hops.put(p.key(), p.hops()));
    return E2eReport.measurements(writerMax, how, hops, byPipeline);
  }

  private record Run(double writerMax, List<Phase> phases) {}

  private Run run(E2ePipeline p, int round, double writerMax) throws Exception {
    try (AutoCloseable broker = p.broker()) {
      return run(p, round, writerMax, p.topic(env));
    }
  }

  private Run run(E2ePipeline p, int round, double writerMax, String topic) throws Exception {
    Db db = env.database("e2e_" + p.key() + round, LatencyBench.WRITERS + 24);
    WriteBench.BusinessTx tx = new WriteBench.BusinessTx(db, Optional.of(Outbox.postgres()), topic);
    try (E2eTimes times = E2eTimes.open(p.receives());
        AutoCloseable running = p.start(env, db, topic, times)) {
      phase(db, tx, times, "warm-up", 1_000, max(config.latencyPhase(), WARM_UP));
      double max = writerMax;
      if (max <= 0) {
        max = writerMax(tx, times);
        phase(db, tx, times, "warm-up", 1_000, max(config.latencyPhase(), WARM_UP));
      }
      List<Phase> phases = new ArrayList<>();
      for (int rate : config.quick() ? QUICK_RATES : FULL_RATES) {
        phases.add(phase(db, tx, times, rate / 1000 + "k", rate, config.latencyPhase()));
      }
      phases.add(phase(db, tx, times, "half_max", E2eFigures.halfMax(max), config.latencyPhase()));
      phases.add(
          phase(db, tx, times, "quarter_max", E2eFigures.quarterMax(max), config.latencyPhase()));
      return new Run(max, phases);
    } finally {
      db.dataSource().close(); // the next pipeline's run needs none of its connections
    }
  }

  /** The writers back to back for a phase: transactions/s; waits until every effect committed. */
  private double writerMax(WriteBench.BusinessTx tx, E2eTimes times) throws InterruptedException {
    times.clear();
    long t0 = System.nanoTime();
    long commits = tx.runFor(LatencyBench.WRITERS, config.latencyPhase());
    double rate = Rate.since(t0, commits);
    BenchEnv.awaitCount("e2e writers' maximum drained", times::effects, commits, NO_PROGRESS);
    times.clear();
    return rate;
  }

  /** Offers {@code rate}/s for {@code length}, waits until every effect committed, measures. */
  private Phase phase(
      Db db, WriteBench.BusinessTx tx, E2eTimes times, String key, int rate, Duration length)
      throws InterruptedException {
    times.clear();
    Map<UUID, Long> committed = new ConcurrentHashMap<>();
    ProcessCpu cpu = ProcessCpu.of(db.dataSource());
    Map<String, Double> before = cpu.snapshot();
    long t0 = System.nanoTime();
    LatencyBench.offer(tx, rate, length, committed, E2eTimes::nowMicros);
    double achieved = Rate.since(t0, committed.size());
    BenchEnv.awaitCount("e2e " + key, times::effects, committed.size(), NO_PROGRESS);
    Map<String, Double> cpuUs = ProcessCpu.perMessageUs(before, cpu.snapshot(), committed.size());
    E2eFigures.Events events = times.take(committed);
    return new Phase(key, rate, achieved, E2eFigures.latencies(events), cpuUs);
  }

  private static String p99s(List<Phase> phases) {
    StringBuilder b = new StringBuilder();
    for (Phase p : phases) {
      b.append(
          String.format(
              Locale.ROOT,
              "%s (%d/s offered, %.0f achieved) p99 %.1f ms; ",
              p.key(),
              p.offered(),
              p.achieved(),
              p.total(99)));
    }
    return b.toString().trim();
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
