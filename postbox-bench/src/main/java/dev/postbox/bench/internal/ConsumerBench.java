package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresOffsetStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.KafkaSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Consumer throughput with a one-row PostgreSQL effect per message (AT_LEAST_ONCE without dedupe,
 * EFFECTIVELY_ONCE single and batch, and Spring Kafka's listener container with a JDBC effect per
 * record), and key-ordered concurrency (one partition, 1,000 keys, 5 ms of simulated I/O per
 * message, in partition order, key order and unordered).
 */
public final class ConsumerBench {

  /** Partitions of the consumer throughput topic (Spring runs one listener thread each). */
  static final int PARTITIONS = 6;

  /**
   * Records per batch of our batch consumer: Spring's poll batch ({@code max.poll.records}, 500),
   * so both sides commit as many records per transaction. With batches of 100 against Spring's 500
   * ours was 0.69x-0.71x Spring's, with 500 about 1x (2026-12-02, docs/benchmarks.md).
   */
  static final int BATCH_SIZE = 500;

  /**
   * Our batch consumer's in-flight limit: two batches of {@link #BATCH_SIZE} per partition, so that
   * each partition's share of the window holds two, which key order lets run side by side (batches
   * of other keys of one partition): twelve transactions at once where Spring's batch listener runs
   * one per partition. Measured in the batch race (2026-12-03): one batch per partition 87,000/s,
   * two 106,000/s, four 103,000-105,000/s (by then both cores are busy).
   */
  static final int BATCH_MAX_IN_FLIGHT = 2 * PARTITIONS * BATCH_SIZE;

  /**
   * Rounds of the batch race (one run of each side per round). Five, not three: with three, one
   * run's ratio of medians read 1.42x while its rounds' own ratios were 1.22x, 1.20x and 1.73x
   * (2026-12-04); the paired median needs more than one round to outvote a freak.
   */
  static final int RACE_ROUNDS = 5;

  /**
   * Records per run of the batch race in full mode (on a topic of its own when the other consumer
   * runs read fewer). With the consumer group's 50,000, a run of either side lasted under a second
   * on a quiet 2-core machine (60,000-77,000 records/s, 2026-12-02): mostly the group's join and
   * the first fetches, not the steady rate the race is about.
   */
  static final int RACE_EVENTS = 300_000;

  /**
   * The batch race's records per run: {@link #RACE_EVENTS}, or the consumer runs' in quick mode.
   */
  private int raceEvents() {
    return config.quick()
        ? config.consumerEvents()
        : Math.max(config.consumerEvents(), RACE_EVENTS);
  }

  private static final String INSERT_EFFECT = "INSERT INTO bench_effect VALUES (?, ?, ?)";
  private static final AtomicInteger GROUPS = new AtomicInteger();

  private final BenchEnv env;
  private final BenchConfig config;
  private Db db;
  private String topic;

  public ConsumerBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Fills the topic once (not timed). */
  public void prepare() throws InterruptedException {
    db = env.database("consumer", 40);
    topic = env.topic("consumer", PARTITIONS);
    env.fillTopic(topic, config.consumerEvents());
  }

  /**
   * Records of the untimed run, of the same configuration in a group of its own, that precedes
   * every timed consumer run, ours and Spring's alike. A single warm-up of the first variant left
   * the just-in-time compilation of the code all variants share (the Kafka fetch path, pgjdbc,
   * Hikari) inside the first timed runs: 9.0 s of compiler time during the at-least-once run, 1.5 s
   * during Spring's, which ran last.
   */
  private int warmupEvents() {
    return Math.min(config.consumerEvents(), 20_000);
  }

  /**
   * Records of each side's untimed run before the batch race: a third of a run (100,000 in full
   * mode), at least the other runs' warm-up. With the other runs' 20,000 (under half a second at
   * these rates) our first timed round was the slowest of every run on 2026-12-03, at 18 against
   * 9-11 us of JVM CPU per message in the later rounds (compilation still under way); Spring's
   * changed less (11 against 9-10). Every side gets the same warm-up.
   */
  private int raceWarmupEvents(int runEvents) {
    return Math.max(warmupEvents(), runEvents / 3);
  }

  /** AT_LEAST_ONCE, no dedupe: each message's effect in its own auto-commit statement. */
  public Measurement atLeastOnce() throws InterruptedException {
    run("alo-warmup", topic, alo(), warmupEvents(), this::withEffect);
    double rate = run("alo", topic, alo(), config.consumerEvents(), this::withEffect).rate();
    return Measurement.of("consumer_alo_per_s", rate, "msgs/s")
        .note("concurrency 32 (key order), one INSERT per message on a pooled connection");
  }

  /** EFFECTIVELY_ONCE, one message per inbox transaction. */
  public Measurement effectivelyOnceSingle() throws InterruptedException {
    Consumer<KafkaSubscriber.Builder> wiring =
        b ->
            b.inbox(PostgresInboxStore.create(db.dataSource()))
                .handler(d -> insert(d.connection().orElseThrow(), "eo1", d));
    run("eo_single-warmup", topic, eoSingle(), warmupEvents(), wiring);
    double rate = run("eo_single", topic, eoSingle(), config.consumerEvents(), wiring).rate();
    return Measurement.of("consumer_eo_single_per_s", rate, "msgs/s")
        .note("inbox record + effect in one transaction per message");
  }

  /**
   * EFFECTIVELY_ONCE with the inbox, in partition order: the baseline of the offsets-in-PostgreSQL
   * mode, which reads in partition order too.
   */
  public Measurement effectivelyOncePartitionInbox() throws InterruptedException {
    Consumer<KafkaSubscriber.Builder> wiring =
        b ->
            b.inbox(PostgresInboxStore.create(db.dataSource()))
                .handler(d -> insert(d.connection().orElseThrow(), "eop", d));
    run("eo_partition_inbox-warmup", topic, eoPartition(), warmupEvents(), wiring);
    double rate =
        run("eo_partition_inbox", topic, eoPartition(), config.consumerEvents(), wiring).rate();
    return Measurement.of("consumer_eo_partition_inbox_per_s", rate, "msgs/s")
        .note("PARTITION order (" + PARTITIONS + " partitions): inbox record + effect per message");
  }

  /**
   * EFFECTIVELY_ONCE with offsets in PostgreSQL: each partition's next offset in the effect's
   * transaction instead of an inbox record.
   */
  public Measurement effectivelyOnceOffsets() throws InterruptedException {
    Consumer<KafkaSubscriber.Builder> wiring =
        b ->
            b.offsetStore(PostgresOffsetStore.create(db.dataSource()))
                .handler(d -> insert(d.connection().orElseThrow(), "eoo", d));
    run("eo_offsets-warmup", topic, eoPartition(), warmupEvents(), wiring);
    double rate = run("eo_offsets", topic, eoPartition(), config.consumerEvents(), wiring).rate();
    return Measurement.of("consumer_eo_offsets_per_s", rate, "msgs/s")
        .note("PARTITION order (" + PARTITIONS + " partitions): offset row + effect per message");
  }

  /**
   * Spring Kafka's per-record listener (one thread per partition), {@code DefaultErrorHandler}, a
   * JDBC effect per record in auto-commit, offsets committed per poll batch (its default): a weaker
   * configuration than its batch listener ({@link #batchRace}), reported only as such.
   */
  public Measurement springKafka() throws InterruptedException {
    runSpring("spring-kafka-warmup", topic, warmupEvents(), this::recordListener);
    double rate =
        runSpring("spring-kafka", topic, config.consumerEvents(), this::recordListener).rate();
    return Measurement.of("spring_kafka_jdbc_per_s", rate, "msgs/s")
        .note(
            "Spring Kafka's per-record listener (a weaker configuration than its batch listener,"
                + " spring_kafka_batch_tx_jdbc_per_s): ConcurrentMessageListenerContainer,"
                + " concurrency "
                + PARTITIONS
                + ", DefaultErrorHandler, one INSERT per record (auto-commit)");
  }

  /** Our effectively-once batch consumer and Spring Kafka's batch listener, measured in turn. */
  public record BatchRace(
      Measurement ours,
      Measurement spring,
      Measurement oursSteady,
      Measurement springSteady,
      Measurement oursCpu,
      Measurement springCpu,
      Measurement ceiling,
      Measurement ceilingCpu,
      Measurement pairedRatio) {}

  /**
   * Our {@code EFFECTIVELY_ONCE} batch consumer (batches of up to {@link #BATCH_SIZE}: inbox
   * records + effects in one transaction per batch) against Spring Kafka's <b>batch</b> listener,
   * the peer at its best: the same container, and per poll batch one JDBC transaction with the
   * dedupe inserts ({@code ON CONFLICT DO NOTHING} on the message id of the record's {@code ce_id}
   * header, into a table keyed like our inbox, {@code (message_id, consumer)}) and the effects of
   * the new ones, each as a JDBC batch, so it is effectively once too. What it lacks against ours:
   * per-key order with key-level concurrency (one thread per partition) and per-record failure
   * isolation (one failing record re-runs the whole batch).
   *
   * <p>A third side bounds what any dedupe of ours could reach: our batch consumer {@code
   * AT_LEAST_ONCE}, with no inbox and no dedupe at all, writing the same effects (a JDBC batch in
   * one transaction per batch of the same size). An effectively-once consumer does that work and
   * more, so its ratio to Spring's batch listener cannot be above this side's on the same machine.
   *
   * <p>After one untimed run of each, {@link #RACE_ROUNDS} rounds of one run each, ours, the
   * ceiling, then Spring's, so that a machine whose load drifts weighs on both alike; each figure
   * is the median of its runs, with the runs and their spread in the note, and the CPU per message
   * of this JVM, the broker and PostgreSQL (the median run's) beside it. The progress log adds, per
   * run, when the first record was applied (group join and assignment) and the rate from then on.
   */
  public BatchRace batchRace() throws InterruptedException {
    BenchEnv.execute(
        db.dataSource(),
        "CREATE TABLE IF NOT EXISTS bench_spring_dedupe (consumer text NOT NULL,"
            + " message_id uuid NOT NULL, PRIMARY KEY (message_id, consumer))");
    ProcessCpu cpu = ProcessCpu.of(db.dataSource());
    Consumer<KafkaSubscriber.Builder> wiring = this::batchWiring;
    int n = raceEvents();
    String raceTopic = topic;
    if (n > config.consumerEvents()) {
      raceTopic = env.topic("batchrace", PARTITIONS);
      env.fillTopic(raceTopic, n);
    }
    String t = raceTopic;
    Consumer<KafkaSubscriber.Builder> noDedupe = this::aloBatchWiring;
    int warmup = raceWarmupEvents(n);
    run("eo_batch-warmup", t, eoBatch(t), warmup, wiring);
    run("alo_batch-warmup", t, aloBatch(t), warmup, noDedupe);
    runSpring("spring-kafka-batch-warmup", t, warmup, this::batchListener);
    RaceRuns.Run[] ours = new RaceRuns.Run[RACE_ROUNDS];
    RaceRuns.Run[] ceiling = new RaceRuns.Run[RACE_ROUNDS];
    RaceRuns.Run[] spring = new RaceRuns.Run[RACE_ROUNDS];
    for (int i = 0; i < RACE_ROUNDS; i++) {
      ours[i] = RaceRuns.withCpu(cpu, n, () -> run("eo_batch", t, eoBatch(t), n, wiring));
      ceiling[i] = RaceRuns.withCpu(cpu, n, () -> run("alo_batch", t, aloBatch(t), n, noDedupe));
      spring[i] =
          RaceRuns.withCpu(
              cpu, n, () -> runSpring("spring-kafka-batch", t, n, this::batchListener));
      System.err.printf(
          "bench: batch race round %d: ours %s; no dedupe %s; Spring %s; load %s%n",
          i + 1, ours[i], ceiling[i], spring[i], RaceRuns.loadAverage());
    }
    String perRun = String.format(java.util.Locale.ROOT, "%,d records per run; ", n);
    String oursNote =
        perRun
            + "batches of up to "
            + BATCH_SIZE
            + " (key order: a batch holds whole keys of one partition's poll, a key in one batch"
            + " at a time; max in flight "
            + BATCH_MAX_IN_FLIGHT
            + "): inbox records (one statement) + effect INSERTs (a JDBC batch) in one transaction"
            + " per batch";
    String springNote =
        perRun
            + "ConcurrentMessageListenerContainer, concurrency "
            + PARTITIONS
            + ", batch listener (a poll batch, max.poll.records 500), one JDBC transaction per"
            + " batch: dedupe INSERT ... ON CONFLICT DO NOTHING (the ce_id header's message id,"
            + " primary key (message_id, consumer) as our inbox's) and effect INSERTs as JDBC"
            + " batches";
    String steady =
        "from the first record applied to the last (group join and assignment left out), ";
    return new BatchRace(
        RaceRuns.median("consumer_eo_batch_per_s", ours, RaceRuns.Run::rate, oursNote),
        RaceRuns.median("spring_kafka_batch_tx_jdbc_per_s", spring, RaceRuns.Run::rate, springNote),
        RaceRuns.median(
            "consumer_eo_batch_steady_per_s", ours, RaceRuns.Run::steadyRate, steady + oursNote),
        RaceRuns.median(
            "spring_kafka_batch_steady_per_s",
            spring,
            RaceRuns.Run::steadyRate,
            steady + springNote),
        RaceRuns.cpuFigure("consumer_eo_batch_cpu_us_per_msg", ours),
        RaceRuns.cpuFigure("spring_kafka_batch_cpu_us_per_msg", spring),
        RaceRuns.median(
            "consumer_alo_batch_per_s",
            ceiling,
            RaceRuns.Run::rate,
            perRun
                + "the same batches, AT_LEAST_ONCE: no inbox, no dedupe; the same effect INSERTs (a"
                + " JDBC batch) in one transaction per batch on a pooled connection"),
        RaceRuns.cpuFigure("consumer_alo_batch_cpu_us_per_msg", ceiling),
        RaceRuns.pairedRatio(
            "consumer_eo_batch_vs_spring_kafka_batch_paired",
            ours,
            spring,
            "consumer_eo_batch_per_s / spring_kafka_batch_tx_jdbc_per_s round by round (each"
                + " round runs ours, the ceiling, then Spring's)"));
  }

  /**
   * One run of the batch race's {@code EFFECTIVELY_ONCE} batch consumer over the {@linkplain
   * #prepare() prepared} topic, in a group of its own, as a run of a repeated figure (the cluster
   * group's consumer figure).
   */
  Repeated.Once eoBatchRun() {
    return round -> {
      RaceRuns.Run r =
          run("eo_batch", topic, eoBatch(topic), config.consumerEvents(), this::batchWiring);
      return new Repeated.Run(
          r.rate(),
          String.format(
              java.util.Locale.ROOT,
              "%,d records, %d partitions; batches of up to %d, inbox records + effect INSERTs in"
                  + " one transaction per batch (as consumer_eo_batch_per_s); last run: first"
                  + " record after %.0f ms, %.0f msgs/s from then on",
              config.consumerEvents(),
              PARTITIONS,
              BATCH_SIZE,
              r.firstMs(),
              r.steadyRate()));
    };
  }

  /** The same effects as {@link #batchWiring}, without the inbox: one transaction per batch. */
  private void aloBatchWiring(KafkaSubscriber.Builder b) {
    DataSource ds = db.dataSource();
    b.batchHandler(deliveries -> {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try (PreparedStatement ps = c.prepareStatement(INSERT_EFFECT)) {
          for (Delivery d : deliveries) {
            bind(ps, "alob", d);
            ps.addBatch();
          }
          ps.executeBatch();
          c.commit();
        } catch (SQLException e) {
          c.rollback();
          throw e;
        }
      }
    });
  }

  private void batchWiring(KafkaSubscriber.Builder b) {
    b.inbox(PostgresInboxStore.create(db.dataSource()))
        .batchHandler(deliveries -> {
          Connection c = deliveries.get(0).connection().orElseThrow();
          try (PreparedStatement ps = c.prepareStatement(INSERT_EFFECT)) {
            for (Delivery d : deliveries) {
              bind(ps, "eob", d);
              ps.addBatch();
            }
            ps.executeBatch();
          }
        });
  }

  private Object recordListener(String group, AtomicLong applied) {
    DataSource ds = db.dataSource();
    return (MessageListener<byte[], byte[]>)
        record -> {
          try (Connection c = ds.getConnection();
              PreparedStatement ps = c.prepareStatement(INSERT_EFFECT)) {
            ps.setString(1, "spring");
            ps.setObject(2, messageId(record));
            ps.setString(3, new String(record.key(), java.nio.charset.StandardCharsets.UTF_8));
            ps.executeUpdate();
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
          applied.incrementAndGet();
        };
  }

  private Object batchListener(String group, AtomicLong applied) {
    DataSource ds = db.dataSource();
    return (BatchMessageListener<byte[], byte[]>)
        records -> {
          try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement dedupe =
                    c.prepareStatement(
                        "INSERT INTO bench_spring_dedupe VALUES (?, ?) ON CONFLICT DO NOTHING");
                PreparedStatement effect = c.prepareStatement(INSERT_EFFECT)) {
              java.util.UUID[] ids = new java.util.UUID[records.size()];
              for (int i = 0; i < ids.length; i++) {
                ids[i] = messageId(records.get(i));
                dedupe.setString(1, group);
                dedupe.setObject(2, ids[i]);
                dedupe.addBatch();
              }
              int[] inserted = dedupe.executeBatch();
              for (int i = 0; i < inserted.length; i++) {
                if (inserted[i] == 0) {
                  continue; // seen before: no second effect
                }
                ConsumerRecord<byte[], byte[]> r = records.get(i);
                effect.setString(1, "spring-batch");
                effect.setObject(2, ids[i]);
                effect.setString(3, new String(r.key(), java.nio.charset.StandardCharsets.UTF_8));
                effect.addBatch();
              }
              effect.executeBatch();
              c.commit();
            } catch (SQLException e) {
              c.rollback();
              throw e;
            }
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
          applied.addAndGet(records.size());
        };
  }

  /** Spring's container in a new group until it applied {@code n} records: messages/s. */
  private RaceRuns.Run runSpring(
      String what,
      String topic,
      int n,
      java.util.function.BiFunction<String, AtomicLong, Object> listener)
      throws InterruptedException {
    AtomicLong applied = new AtomicLong();
    String group = "bench-spring-" + GROUPS.incrementAndGet();
    Map<String, Object> props = new HashMap<>();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    ContainerProperties cp = new ContainerProperties(topic);
    cp.setMessageListener(listener.apply(group, applied));
    ConcurrentMessageListenerContainer<byte[], byte[]> container =
        new ConcurrentMessageListenerContainer<>(
            new DefaultKafkaConsumerFactory<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer()),
            cp);
    container.setConcurrency(PARTITIONS);
    container.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(100, 2)));
    long t0 = System.nanoTime();
    container.start();
    try {
      return timed(what, t0, applied::get, n);
    } finally {
      container.stop();
    }
  }

  /** Key-ordered concurrency: one partition, 1,000 keys, a handler that waits 5 ms. */
  public Measurement keyOrder(Ordering ordering) throws InterruptedException {
    int n =
        ordering == Ordering.PARTITION ? config.keyOrderPartitionEvents() : config.keyOrderEvents();
    String t = env.topic("keys", 1);
    env.fillTopic(t, n);
    Subscription.Builder s =
        Subscription.builder("bench-keys-" + ordering + "-" + GROUPS.incrementAndGet())
            .topics(t)
            .ordering(ordering)
            .concurrency(1_000)
            .maxInFlight(5_000);
    double rate = run("keys", t, s, n, b -> b.handler(d -> Thread.sleep(5))).rate();
    String name =
        switch (ordering) {
          case PARTITION -> "key_order_partition_per_s";
          case KEY -> "key_order_key_per_s";
          case UNORDERED -> "key_order_unordered_per_s";
        };
    return Measurement.of(name, rate, "msgs/s")
        .note(n + " messages, 1 partition, 1,000 keys, 5 ms sleep each, concurrency 1,000");
  }

  private Subscription.Builder alo() {
    return base("alo");
  }

  private Subscription.Builder eoSingle() {
    return base("eo1").guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE);
  }

  /** EFFECTIVELY_ONCE in partition order, in a group of its own. */
  private Subscription.Builder eoPartition() {
    return eoSingle().ordering(Ordering.PARTITION);
  }

  private Subscription.Builder eoBatch(String topic) {
    return base("eob", topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .batchSize(BATCH_SIZE)
        .maxInFlight(BATCH_MAX_IN_FLIGHT);
  }

  /** The same batches as {@link #eoBatch}, {@code AT_LEAST_ONCE} (the race's ceiling). */
  private Subscription.Builder aloBatch(String topic) {
    return base("alob", topic).batchSize(BATCH_SIZE).maxInFlight(BATCH_MAX_IN_FLIGHT);
  }

  private Subscription.Builder base(String what) {
    return base(what, topic);
  }

  private Subscription.Builder base(String what, String topic) {
    return Subscription.builder("bench-" + what + "-" + GROUPS.incrementAndGet())
        .topics(topic)
        .concurrency(32);
  }

  private KafkaSubscriber.Builder withEffect(KafkaSubscriber.Builder b) {
    DataSource ds = db.dataSource();
    return b.handler(d -> {
      try (Connection c = ds.getConnection()) {
        insert(c, "alo", d);
      }
    });
  }

  /** Consumes {@code n} messages of {@code topic} from the start: messages/s. */
  private RaceRuns.Run run(
      String what,
      String topic,
      Subscription.Builder subscription,
      int n,
      Consumer<KafkaSubscriber.Builder> wiring)
      throws InterruptedException {
    KafkaSubscriber.Builder b = KafkaSubscriber.builder(env.bootstrap(), subscription.build());
    wiring.accept(b);
    long t0 = System.nanoTime();
    try (KafkaSubscriber s = b.build()) {
      s.start();
      return timed(what, t0, () -> s.stats().applied() + s.stats().duplicatesSuppressed(), n);
    }
  }

  /**
   * Waits until {@code progress} reaches {@code n}: the rate since {@code t0}, when the first
   * record was applied, and the rate from then on.
   */
  private static RaceRuns.Run timed(
      String what, long t0, java.util.function.LongSupplier progress, int n)
      throws InterruptedException {
    long deadline = t0 + Duration.ofSeconds(60).toNanos();
    while (progress.getAsLong() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    long first = System.nanoTime();
    long atFirst = progress.getAsLong();
    BenchEnv.awaitCount(what, progress, n, Duration.ofSeconds(60));
    return new RaceRuns.Run(
        Rate.since(t0, n),
        (first - t0) / 1e6,
        Rate.since(first, Math.max(1, n - atFirst)),
        Map.of());
  }

  /**
   * The message id a Spring listener dedupes by: the record's {@code ce_id} header, the id our
   * consumer's inbox records, so both sides dedupe the same key (a relay's re-publication of a
   * message, at another offset, is a duplicate to both).
   */
  private static java.util.UUID messageId(ConsumerRecord<byte[], byte[]> record) {
    return java.util.UUID.fromString(
        new String(
            record.headers().lastHeader(KafkaRecords.CE_ID).value(),
            java.nio.charset.StandardCharsets.US_ASCII));
  }

  private static void insert(Connection c, String consumer, Delivery d) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT_EFFECT)) {
      bind(ps, consumer, d);
      ps.executeUpdate();
    }
  }

  private static void bind(PreparedStatement ps, String consumer, Delivery d) throws SQLException {
    ps.setString(1, consumer);
    ps.setObject(2, d.message().id());
    ps.setString(3, d.message().key().orElse(null));
  }
}
