package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.ChildJvm;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Commit to broker-ack latency of the CDC relay and of Debezium's embedded connector at fixed
 * offered rates (part of {@code ./postbox bench --only cdc}, issue 15).
 *
 * <p><b>Method, the same for both.</b> An open loop of {@link LatencyBench#WRITERS} writers commits
 * one business transaction (an order row and its outbox row) per event on a fixed schedule ({@link
 * LatencyBench#offer}) and records, right after {@code commit()} returned, the machine's wall clock
 * against the message's id. The topic stamps each record with the broker's wall clock at its append
 * ({@link BrokerAckTimes}): on the test kit's single broker that is the {@code acks=all}
 * acknowledgement. Latency = append instant minus commit instant, both read from the same host
 * clock; the broker's stamp has millisecond resolution (truncated), so it is read at the middle of
 * its millisecond ({@link BrokerAckTimes#STAMP_MIDPOINT_MS}): a latency reads up to half a
 * millisecond off either way, and a sub-millisecond one can read slightly negative. The topic is
 * read only after each phase, so reading costs the streamers nothing.
 *
 * <p><b>One streamer at a time</b>, each on its own schema and slot, so they never share the CPU:
 * the CDC relay (its defaults) first, then Debezium in its child JVM in its low-latency
 * configuration ({@link DebeziumPeer#LOW_LATENCY}); each slot is dropped after its run. Each gets a
 * warm-up at 1,000/s, five seconds with nothing written (the CPU the machine spends idle, {@code
 * *_idle_cpu_ms_per_s}), then the fixed rates in ascending order, then half and a quarter of the
 * writers' maximum, each waited out (every message appended) before the next. A rate the writers
 * cannot keep (achieved below 90 % of offered, on the same 2 cores as the database, broker and
 * streamer) is marked in the notes: past it the figure measures a queue. Before the relay's rates,
 * the writers' closed-loop maximum with the relay streaming is measured ({@code
 * cdc_latency_writer_max_tx_per_s}); half of it ({@code half_max}, the same offered rate for every
 * streamer) is a rate the writers keep even on a loaded machine, so its figures are the streamers'
 * latency rather than a queue; a quarter of it ({@code quarter_max}) leaves the cores mostly free.
 * Every phase reports the CPU per event of this JVM (the writers and the relay), the broker's
 * processes and PostgreSQL's.
 *
 * <p><b>The polling relay too</b>, third and alone, with the same writers, rates and clock: {@link
 * Relay} with its defaults (the writers' {@code NOTIFY} wakes it; a poll every second otherwise),
 * keys {@code cdc_polling_latency_*}, the same figures, its 1k p99 against the 50 ms. In
 * full mode a fourth, the polling relay with {@code idleGrace} 0 (how it ran before the grace),
 * keys {@code cdc_polling_no_grace_latency_*} and {@code cdc_polling_latency_*_p99_vs_no_grace},
 * and the CDC relay with {@code batchLinger} 2 ms, right after the default one, keys {@code
 * cdc_linger_latency_*} and {@code cdc_latency_*_p99_vs_linger}, then the CDC relay with {@code
 * binaryValues} off (every value as text), keys {@code cdc_text_latency_*} and {@code
 * cdc_latency_*_p99_vs_text}.
 */
public final class CdcLatencyBench {

  /** Offered rates, events/s (one outbox row per transaction). */
  static final int[] RATES = {1_000, 2_000, 5_000};

  /** The target for the relay's p99, ms. */
  static final double MAX_P99_MS = 20;

  /** The target for the polling relay's p99 at 1,000 events/s, ms. */
  static final double MAX_POLLING_P99_MS = 50;

  private static final int PARTITIONS = 6;
  private static final double SUSTAINED = 0.9;
  private static final Duration NO_PROGRESS = Duration.ofSeconds(60);
  private static final Duration WARM_UP = Duration.ofSeconds(5);
  private static final Duration IDLE = Duration.ofSeconds(5);

  private final BenchEnv env;
  private final BenchConfig config;
  private final Clock clock = Clock.systemUTC();
  private final List<Measurement> idle = new ArrayList<>();
  private final boolean measureIdle;
  private int peakConnections;

  public CdcLatencyBench(BenchEnv env, BenchConfig config) {
    this(env, config, true);
  }

  /**
   * A bench whose streamers skip the idle CPU measurement when {@code measureIdle} is false (the
   * rounds of {@link CdcLatencyRounds}, which report latency only).
   */
  CdcLatencyBench(BenchEnv env, BenchConfig config, boolean measureIdle) {
    this.env = env;
    this.config = config;
    this.measureIdle = measureIdle;
  }

  /**
   * One offered rate's result.
   *
   * @param key the rate's part of the figure names ({@code 1k}, {@code half_max})
   * @param offered events/s offered
   * @param achieved transactions/s the writers committed
   * @param sortedMs every event's commit to broker-append latency, ms, ascending
   * @param cpuUs CPU microseconds per event during the phase by kind ({@code jvm}: this one, with
   *     the writers and the relay in it; {@code broker}: its child processes, the broker and
   *     Debezium's JVM; {@code postgres}: the server, walsender included) and their {@code total}
   */
  record Phase(
      String key,
      int offered,
      double achieved,
      double[] sortedMs,
      Map<String, Double> cpuUs,
      String stalls) {
    boolean sustained() {
      return achieved >= SUSTAINED * offered;
    }

    double percentile(double p) {
      return OpenLoop.percentile(sortedMs, p);
    }
  }

  /**
   * The writers' maximum, then p50, p99, p99.9 and the achieved rate per offered rate for the
   * relay, the same for Debezium, then the relay's p99 over Debezium's per rate.
   */
  public List<Measurement> run() throws Exception {
    CdcRun cdc =
        cdcPhases(
            "cdclat",
            "lat",
            "cdc_latency_",
            CdcRelay.DEFAULT_BATCH_LINGER,
            CdcRelay.DEFAULT_BINARY_VALUES,
            0,
            RATES);
    double writerMax = cdc.writerMax();
    List<Phase> relay = cdc.phases();
    // the CDC relay with a batch linger, right after the default one (each streamed batch sent at
    // once) so that the two see the machine alike (full mode only)
    List<Phase> linger =
        config.quick()
            ? List.of()
            : cdcPhases(
                    "cdclat_linger",
                    "linger",
                    LINGER_PREFIX,
                    LINGER,
                    CdcRelay.DEFAULT_BINARY_VALUES,
                    writerMax,
                    RATES)
                .phases();
    // the CDC relay with the values streamed as text (as before binaryValues), next
    List<Phase> text =
        config.quick()
            ? List.of()
            : cdcPhases(
                    "cdclat_text",
                    "text",
                    TEXT_PREFIX,
                    CdcRelay.DEFAULT_BATCH_LINGER,
                    false,
                    writerMax,
                    RATES)
                .phases();
    List<Phase> dbz = debeziumPhases("cdclat_dbz", writerMax, RATES);
    List<Phase> polling =
        pollingPhases("cdclat_poll", "cdc_polling_latency_", Relay.DEFAULT_IDLE_GRACE, writerMax);
    // the relay as it was before its idle grace, in the same run: what the grace changes (full
    // mode only; the quick run in CI checks the figures, not the comparison)
    List<Phase> noGrace =
        config.quick()
            ? List.of()
            : pollingPhases("cdclat_nograce", NO_GRACE_PREFIX, Duration.ZERO, writerMax);
    List<Measurement> out = measurements(writerMax, relay, dbz);
    out.addAll(CdcLatencyFigures.pollingMeasurements(relay, polling));
    out.addAll(
        CdcLatencyFigures.variantMeasurements(
            "cdc_polling_latency_",
            polling,
            "no_grace",
            NO_GRACE_PREFIX,
            noGrace,
            "polling relay with idleGrace 0 (idle at the first empty claim: how it ran before the"
                + " grace), otherwise as cdc_polling_latency_, alone after it"));
    out.addAll(
        CdcLatencyFigures.variantMeasurements(
            "cdc_latency_",
            relay,
            "linger",
            LINGER_PREFIX,
            linger,
            "CDC relay with batchLinger "
                + LINGER.toMillis()
                + " ms (a batch waits for the rows streamed meanwhile), otherwise as cdc_latency_,"
                + " alone right after it"));
    out.addAll(
        CdcLatencyFigures.variantMeasurements(
            "cdc_latency_",
            relay,
            "text",
            TEXT_PREFIX,
            text,
            "CDC relay with binaryValues false (the server formats every value as text, the relay"
                + " parses it), otherwise as cdc_latency_, alone after the linger variant"));
    out.addAll(idle);
    return out;
  }

  /**
   * Debezium's embedded connector in its child JVM, alone on its own schema and slot (dropped
   * after), in its low-latency configuration: its phases at {@code rates}, then half and a quarter
   * of {@code writerMax}.
   */
  List<Phase> debeziumPhases(String schema, double writerMax, int[] rates) throws Exception {
    Db dbzDb = env.database(schema, LatencyBench.WRITERS + 4);
    try {
      String dbzSlot = slotName(dbzDb, "dbz");
      List<Phase> dbz;
      try (ChildJvm child = new DebeziumPeer(env, config).startStreaming(dbzDb, dbzSlot)) {
        warmUp(dbzDb);
        if (measureIdle) {
          idle.add(idleCpu(dbzDb, "cdc_debezium_latency_", "Debezium"));
        }
        dbz = phases(dbzDb, writerMax, rates);
        countConnections(dbzDb);
        if (!child.isAlive()) {
          throw new IllegalStateException("the Debezium child exited:\n" + child.logTail(40));
        }
      }
      Slots.drop(dbzDb, dbzSlot);
      return dbz;
    } finally {
      dbzDb.dataSource().close(); // its connections are not needed by the next streamer's run
    }
  }

  /**
   * The most connections (client backends and WAL senders, both counted against {@code
   * max_connections}) open on the server at the end of a streamer's phases so far: what the runs
   * need of the server.
   */
  int peakConnections() {
    return peakConnections;
  }

  private void countConnections(Db db) throws SQLException {
    peakConnections = Math.max(peakConnections, ServerConnections.count(db.dataSource()));
  }

  /** The CDC relay's phases, and the writers' maximum measured with it streaming. */
  record CdcRun(double writerMax, List<Phase> phases) {}

  /**
   * The CDC relay with {@code batchLinger} and {@code binaryValues} alone on its own schema and
   * slot (dropped after): its phases at {@code rates}, then half and a quarter of the writers'
   * maximum; first that maximum with it streaming when {@code writerMax} is 0.
   */
  CdcRun cdcPhases(
      String schema,
      String slotTag,
      String prefix,
      Duration batchLinger,
      boolean binaryValues,
      double writerMax,
      int[] rates)
      throws Exception {
    Db db = env.database(schema, LatencyBench.WRITERS + 8);
    try {
      return cdcPhases(db, schema, slotTag, prefix, batchLinger, binaryValues, writerMax, rates);
    } finally {
      db.dataSource().close(); // its connections are not needed by the next streamer's run
    }
  }

  private CdcRun cdcPhases(
      Db db,
      String schema,
      String slotTag,
      String prefix,
      Duration batchLinger,
      boolean binaryValues,
      double writerMax,
      int[] rates)
      throws Exception {
    String slot = slotName(db, slotTag);
    CdcRun run;
    try (CdcRelay r =
        CdcRelay.builder(
                db.dataSource(),
                env.jdbcUrl(),
                KafkaRelayPublisher.builder(env.bootstrap()).build())
            .instanceId("bench-" + schema)
            .slotName(slot)
            .publicationName(slot + "_pub")
            .batchLinger(batchLinger)
            .binaryValues(binaryValues)
            .build()) {
      r.start();
      BenchEnv.awaitCount("cdc relay active", () -> r.active() ? 1 : 0, 1, NO_PROGRESS);
      warmUp(db);
      if (measureIdle) {
        idle.add(
            idleCpu(
                db,
                prefix,
                "CDC relay, batchLinger "
                    + batchLinger.toMillis()
                    + " ms, "
                    + (binaryValues ? "binary" : "text")
                    + " values"));
      }
      double max = writerMax;
      if (max <= 0) {
        max = writerMax(db);
        // the burst's aftermath (autovacuum of its rows, the broker's and the marker's backlog)
        // would land on this streamer's first phase alone: another warm-up lets it settle, so this
        // streamer's 1,000/s starts from a machine like the others' (measured: without it, its
        // CPU per event there was 1.3-1.5x the text variant's and equal at every later rate)
        warmUp(db);
      }
      run = new CdcRun(max, phases(db, max, rates));
      countConnections(db);
    }
    Slots.drop(db, slot);
    return run;
  }

  private static final String LINGER_PREFIX = "cdc_linger_latency_";

  private static final String TEXT_PREFIX = "cdc_text_latency_";

  /** The batch linger the variant runs with. */
  private static final Duration LINGER = Duration.ofMillis(2);

  /** The polling relay with {@code idleGrace} alone on its own schema: its phases. */
  private List<Phase> pollingPhases(
      String schema, String prefix, Duration idleGrace, double writerMax) throws Exception {
    Db pollDb = env.database(schema, LatencyBench.WRITERS + 8);
    try (Relay r =
        Relay.builder(
                PostgresRelayStore.create(pollDb.dataSource()),
                KafkaRelayPublisher.builder(env.bootstrap()).build())
            .instanceId("bench-" + schema)
            .idleGrace(idleGrace)
            .build()) {
      r.start();
      warmUp(pollDb);
      idle.add(idleCpu(pollDb, prefix, "polling relay, idleGrace " + idleGrace.toMillis() + " ms"));
      List<Phase> phases = phases(pollDb, writerMax, RATES);
      countConnections(pollDb);
      return phases;
    } finally {
      pollDb.dataSource().close(); // after the relay's close (try-with-resources closes it first)
    }
  }

  private static final String NO_GRACE_PREFIX = "cdc_polling_no_grace_latency_";

  /**
   * CPU while {@code streamer} runs and nothing is written, in ms per second (1,000 = one core), as
   * {@code <prefix>idle_cpu_ms_per_s}: what the machine spends before the first event, which every
   * phase's CPU per event carries too (the broker, PostgreSQL, this JVM, the streamer's idle loop).
   */
  private Measurement idleCpu(Db db, String prefix, String streamer) throws InterruptedException {
    ProcessCpu cpu = ProcessCpu.of(db.dataSource());
    Map<String, Double> before = cpu.snapshot();
    long t0 = System.nanoTime();
    Thread.sleep(min(IDLE, config.latencyPhase()).toMillis());
    double seconds = (System.nanoTime() - t0) / 1e9;
    // per "message" of one second: the ms of CPU per second by kind
    Map<String, Double> usPerS = ProcessCpu.perMessageUs(before, cpu.snapshot(), 1);
    Map<String, Double> msPerS = new java.util.TreeMap<>();
    usPerS.forEach((k, v) -> msPerS.put(k, v / 1000 / seconds));
    return Measurement.of(prefix + "idle_cpu_ms_per_s", msPerS.getOrDefault("total", 0.0), "ms/s")
        .note(
            String.format(
                Locale.ROOT,
                "%s running, nothing written, for %.1f s after the warm-up: CPU ms per second"
                    + " (1,000 = one of the cores) %s",
                streamer,
                seconds,
                CdcLatencyFigures.cpuNote(msPerS)));
  }

  private List<Measurement> measurements(double writerMax, List<Phase> relay, List<Phase> dbz) {
    List<Measurement> out = new ArrayList<>();
    out.add(
        Measurement.of("cdc_latency_writer_max_tx_per_s", writerMax, "tx/s")
            .note(
                LatencyBench.WRITERS
                    + " writers back to back (order row + outbox row, synchronous commit) with the"
                    + " CDC relay streaming, on the same cores: the most any offered rate can"
                    + " reach"));
    String relayHow =
        "CDC relay, defaults (batch 2,000, 4 in flight, no batch linger, binary values; acks=all,"
            + " idempotent, linger 5 ms flushed when the relay waits, lz4)";
    String dbzHow = DebeziumPeer.LOW_LATENCY_SETTINGS;
    for (Phase p : relay) {
      Optional<Target> target =
          p.key().endsWith("_max") ? Optional.empty() : Optional.of(Target.atMost(MAX_P99_MS));
      out.addAll(CdcLatencyFigures.figures("cdc_latency_", p, relayHow, target));
    }
    for (Phase p : dbz) {
      out.addAll(CdcLatencyFigures.figures("cdc_debezium_latency_", p, dbzHow, Optional.empty()));
    }
    out.addAll(
        CdcLatencyFigures.ratios("cdc_latency_", relay, "debezium", "cdc_debezium_latency_", dbz));
    return out;
  }

  /**
   * 1,000/s for a phase's length (at least 5 s: Debezium's child JVM starts cold), waited out: the
   * streamer's and the writers' code warm.
   */
  private void warmUp(Db db) throws InterruptedException {
    offer(db, "warm-up", 1_000, max(config.latencyPhase(), WARM_UP));
  }

  /** The writers back to back for a phase's length; waits until every message is appended. */
  private double writerMax(Db db) throws InterruptedException {
    String topic = env.primedTopic("cdclat", PARTITIONS, BrokerAckTimes.TOPIC_CONFIG);
    WriteBench.BusinessTx tx = new WriteBench.BusinessTx(db, Optional.of(Outbox.postgres()), topic);
    long t0 = System.nanoTime();
    long commits = tx.runFor(LatencyBench.WRITERS, config.latencyPhase());
    double rate = Rate.since(t0, commits);
    BrokerAckTimes.awaitRecords(env.bootstrap(), topic, commits + PARTITIONS, NO_PROGRESS);
    return rate;
  }

  /** Half the writers' maximum, rounded to 10/s (at least 10/s): a rate they surely keep. */
  static int halfMax(double writerMax) {
    return Math.max(10, (int) Math.round(writerMax / 20) * 10);
  }

  /** A quarter of the writers' maximum, rounded to 10/s (at least 10/s). */
  static int quarterMax(double writerMax) {
    return Math.max(10, (int) Math.round(writerMax / 40) * 10);
  }

  /**
   * The fixed rates in ascending order, then half and a quarter of the writers' maximum (the issue:
   * the sustainable maximum first, then latency at fractions of it).
   */
  private List<Phase> phases(Db db, double writerMax, int[] rates) throws InterruptedException {
    List<Phase> out = new ArrayList<>();
    for (int rate : rates) {
      out.add(offer(db, rate / 1000 + "k", rate, config.latencyPhase()));
    }
    out.add(offer(db, "half_max", halfMax(writerMax), config.latencyPhase()));
    out.add(offer(db, "quarter_max", quarterMax(writerMax), config.latencyPhase()));
    return out;
  }

  /** Offers {@code rate}/s for {@code length} to a fresh topic and measures every event. */
  private Phase offer(Db db, String key, int rate, Duration length) throws InterruptedException {
    String topic = env.primedTopic("cdclat", PARTITIONS, BrokerAckTimes.TOPIC_CONFIG);
    WriteBench.BusinessTx tx = new WriteBench.BusinessTx(db, Optional.of(Outbox.postgres()), topic);
    Map<UUID, Long> committedMicros = new ConcurrentHashMap<>();
    ProcessCpu cpu = ProcessCpu.of(db.dataSource());
    Map<String, Double> cpuBefore = cpu.snapshot();
    Stalls stalls = Stalls.start(db.dataSource());
    long t0 = System.nanoTime();
    LatencyBench.offer(tx, rate, length, committedMicros, this::wallMicros);
    double achieved = Rate.since(t0, committedMicros.size());
    BrokerAckTimes.awaitRecords(
        env.bootstrap(), topic, committedMicros.size() + PARTITIONS, NO_PROGRESS);
    Map<String, Double> cpuUs =
        ProcessCpu.perMessageUs(cpuBefore, cpu.snapshot(), committedMicros.size());
    Map<UUID, Long> appendedMs =
        BrokerAckTimes.read(env.bootstrap(), topic, committedMicros.keySet(), NO_PROGRESS);
    long[] commits = new long[committedMicros.size()];
    double[] ms = new double[commits.length];
    int i = 0;
    for (Map.Entry<UUID, Long> e : committedMicros.entrySet()) {
      commits[i] = e.getValue();
      ms[i++] =
          appendedMs.get(e.getKey()) + BrokerAckTimes.STAMP_MIDPOINT_MS - e.getValue() / 1_000.0;
    }
    String stallNote = stalls.summary(commits, ms, MAX_P99_MS);
    Arrays.sort(ms);
    return new Phase(key, rate, achieved, ms, cpuUs, stallNote);
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  private long wallMicros() {
    Instant now = clock.instant();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  private static String slotName(Db db, String suffix) {
    return "bench_" + db.schema().toLowerCase(Locale.ROOT) + "_" + suffix;
  }
}
