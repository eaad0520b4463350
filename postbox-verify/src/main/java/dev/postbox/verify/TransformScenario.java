package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.testkit.ProcessSupervisor;
import dev.postbox.testkit.ProcessSupervisor.Supervised;
import dev.postbox.verify.TransformCheck.Input;
import dev.postbox.verify.TransformCheck.Output;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The {@code transform} scenario (Kafka transactions, consume-transform-produce): three {@link
 * TransformerMain} processes read an input topic and emit {@value TransformerMain#OUTPUTS} outputs
 * per input in one Kafka transaction with the input offsets; they are halted at {@code
 * consumer.transform-before-transaction-commit} (outputs sent, offsets added, not committed) and
 * killed with {@code kill -9} while the harness writes the inputs (per key in order; some marked
 * poison, whose transform fails permanently). Then everything is healed and the output topic is
 * read with {@code read_committed}.
 *
 * <p>Checked: every non-poison input's outputs are there exactly once (lost: a missing output; dup:
 * an extra copy), per key the outputs come in input order (order), every poison input is
 * dead-lettered exactly once and emits nothing, no other input is dead-lettered. Measured: the
 * aborted output records a {@code read_uncommitted} reader sees (the transactions the faults cut
 * off). Inconclusive when the crash point or kill -9 never fired.
 *
 * <p>Not thread-safe; run one at a time.
 */
final class TransformScenario {

  static final String NAME = "transform";
  static final String KILL_9 = "kill-9";
  static final int TRANSFORMERS = 3;
  static final int PARTITIONS = 6;
  static final int KEYS = 60;

  /** One input in this many is poison. */
  static final int POISON_EVERY = 97;

  /** What the scenario found. */
  record Result(
      long inputs,
      long poison,
      long outputsExpected,
      long outputsCommitted,
      long lost,
      long duplicateOutputs,
      long unexpectedOutputs,
      long orderViolations,
      long poisonDeadLettered,
      long poisonWithOutput,
      long duplicateDeadLetters,
      long otherDeadLetters,
      long abortedOutputsSeen,
      Map<String, Integer> faultsFired,
      long recoveryMs,
      boolean drained,
      long seconds) {

    long violations() {
      return lost
          + duplicateOutputs
          + unexpectedOutputs
          + orderViolations
          + (poison - poisonDeadLettered)
          + poisonWithOutput
          + duplicateDeadLetters
          + otherDeadLetters
          + (drained ? 0 : 1);
    }

    boolean inconclusive() {
      return faultsFired.values().stream().anyMatch(n -> n == 0);
    }
  }

  private final long seed;
  private final Path dir;
  private final PrintStream out;
  private final Map<String, AtomicInteger> fired = new ConcurrentHashMap<>();

  TransformScenario(long seed, Path dir, PrintStream out) {
    this.seed = seed;
    this.dir = dir.toAbsolutePath();
    this.out = out;
  }

  /**
   * Writes {@code inputs} inputs at {@code rate} per second; the crash point and kill -9 go on
   * until each fired {@code fires} times (and the inputs are all written), at most {@code
   * patience}.
   */
  Result run(int inputs, double rate, int fires, Duration patience) throws Exception {
    long started = System.nanoTime();
    Files.createDirectories(dir);
    SplittableRandom random = new SplittableRandom(seed);
    fired.put(CrashPoints.TRANSFORM_BEFORE_COMMIT, new AtomicInteger());
    fired.put(KILL_9, new AtomicInteger());
    try (PostgresServer pg = PostgresServer.builder().directory(dir.resolve("postgres")).build();
        KafkaBroker kafka =
            KafkaBroker.builder()
                .dataDirectory(dir.resolve("kafka"))
                .maxHeap("384m")
                .startupTimeout(Duration.ofMinutes(3))
                .build()) {
      pg.start();
      kafka.start();
      String schema = pg.createSchema("tx");
      String suffix = Long.toUnsignedString(seed, 36);
      String in = "tx-in-" + suffix;
      String outTopic = "tx-out-" + suffix;
      String group = "tx-transformers";
      kafka.createTopic(in, PARTITIONS);
      kafka.createTopic(outTopic, PARTITIONS);
      try (HikariDataSource ds = pg.dataSource(schema, 2)) {
        PostboxMigrations.migrate(ds);
        Map<UUID, Input> written = new ConcurrentHashMap<>();
        long recoveryMs;
        boolean drained;
        try (ProcessSupervisor supervisor =
            new ProcessSupervisor(Duration.ofMillis(50), this::exited)) {
          List<Supervised> transformers = new ArrayList<>();
          for (int i = 1; i <= TRANSFORMERS; i++) {
            String name = "transformer-" + i;
            transformers.add(
                supervisor.add(
                    name,
                    c ->
                        Fleet.jvm(TransformerMain.class, dir, name, "160m")
                            .args(
                                kafka.bootstrapServers(),
                                in,
                                outTopic,
                                group,
                                "verify-" + name,
                                pg.jdbcUrl(schema))));
          }
          AtomicBoolean arming = new AtomicBoolean(true);
          supervisor.armer(c -> arm(arming, fires, random));
          transformers.forEach(supervisor::want);
          supervisor.startWatching();
          supervisor.awaitStarted(" started", Duration.ofMinutes(3));
          out.println("transform: " + TRANSFORMERS + " transformers started; writing inputs");
          AtomicBoolean fed = new AtomicBoolean();
          Thread feeder =
              Thread.ofPlatform()
                  .name("transform-feeder")
                  .start(() -> feed(kafka.bootstrapServers(), in, inputs, rate, written, fed));
          long deadline = System.nanoTime() + patience.toNanos();
          SplittableRandom killer = random.split();
          while (System.nanoTime() < deadline
              && (!fed.get() || fired.values().stream().anyMatch(n -> n.get() < fires))) {
            Thread.sleep(2_000 + killer.nextInt(3_000));
            Supervised victim = transformers.get(killer.nextInt(transformers.size()));
            // an armed incarnation is left to its crash point (a kill would keep it from firing)
            if (victim.working(" started")
                && victim.armed().isEmpty()
                && supervisor.kill(victim, KILL_9)) {
              fired.get(KILL_9).incrementAndGet();
            }
          }
          feeder.join();
          // heal: nothing armed, the armed incarnations restarted unarmed
          arming.set(false);
          supervisor.armer(c -> Optional.empty());
          for (Supervised c : transformers) {
            if (!c.armed().isEmpty() || !c.alive()) {
              supervisor.stop(c, "heal", true);
            }
          }
          supervisor.awaitStarted(" started", Duration.ofMinutes(3));
          long healed = System.nanoTime();
          out.println("transform: healed; reading the outputs read_committed");
          drained =
              awaitOutputs(kafka.bootstrapServers(), outTopic, written, ds, Duration.ofMinutes(4));
          recoveryMs = (System.nanoTime() - healed) / 1_000_000;
          supervisor.stopAll(transformers, "end of scenario", Duration.ofSeconds(20));
        }
        return check(
            kafka.bootstrapServers(),
            outTopic,
            written,
            ds,
            recoveryMs,
            drained,
            (System.nanoTime() - started) / 1_000_000_000);
      }
    }
  }

  /** Arms about half the incarnations with the crash point, until it fired {@code fires} times. */
  private Optional<String> arm(AtomicBoolean arming, int fires, SplittableRandom random) {
    synchronized (random) {
      if (!arming.get()
          || fired.get(CrashPoints.TRANSFORM_BEFORE_COMMIT).get() >= fires + 2
          || random.nextDouble() < 0.4) {
        return Optional.empty();
      }
      return Optional.of(CrashPoints.TRANSFORM_BEFORE_COMMIT + "@" + (1 + random.nextInt(6)));
    }
  }

  private void exited(Supervised c, ChildJvm jvm) {
    int code = jvm.exitCode().orElse(-1);
    if (code == CrashPoints.EXIT_CODE && !c.armed().isEmpty()) {
      fired.get(CrashPoints.TRANSFORM_BEFORE_COMMIT).incrementAndGet();
      out.printf("transform: %s halted at %s; restarting%n", c.instance(), c.armed());
    } else if (c.expectedDeath().isEmpty()) {
      out.printf("transform: %s exited with %d; restarting%n", c.instance(), code);
    }
  }

  /** Writes the inputs, per key in order (an idempotent producer keeps a partition's order). */
  private void feed(
      String bootstrap,
      String topic,
      int inputs,
      double rate,
      Map<UUID, Input> written,
      AtomicBoolean fed) {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    SplittableRandom r = new SplittableRandom(seed * 31);
    long[] seqs = new long[KEYS];
    long start = System.nanoTime();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (int i = 0; i < inputs; i++) {
        int k = r.nextInt(KEYS);
        String key = "key-" + k;
        long seq = ++seqs[k];
        boolean poison = i % POISON_EVERY == POISON_EVERY - 1;
        Message.Builder b =
            Message.builder(topic, "verify.input")
                .key(key)
                .header("seq", Long.toString(seq))
                .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}");
        if (poison) {
          b.header("poison", "true");
        }
        Message m = b.build();
        written.put(m.id(), new Input(key, seq, poison));
        producer.send(KafkaRecords.toRecord(m));
        long due = start + (long) ((i + 1) * 1e9 / rate);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
      }
      producer.flush();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      fed.set(true);
    }
  }

  private static List<Output> read(String bootstrap, String topic, String isolation) {
    Map<String, Object> p = new HashMap<>();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    List<Output> outs = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < PARTITIONS; i++) {
        tps.add(new TopicPartition(topic, i));
      }
      c.assign(tps);
      c.seekToBeginning(tps);
      Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (System.nanoTime() < deadline
          && tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          Message m = KafkaRecords.fromRecord(r);
          outs.add(
              new Output(
                  r.partition(),
                  r.offset(),
                  m.key().orElse(""),
                  UUID.fromString(m.header("input").orElseThrow()),
                  Long.parseLong(m.header("seq").orElseThrow()),
                  Integer.parseInt(m.header("idx").orElseThrow())));
        }
      }
    }
    return outs;
  }

  /** Waits until every non-poison input's outputs and every poison input's letter are there. */
  private boolean awaitOutputs(
      String bootstrap, String topic, Map<UUID, Input> written, HikariDataSource ds, Duration max)
      throws Exception {
    long deadline = System.nanoTime() + max.toNanos();
    long expected =
        written.values().stream().filter(i -> !i.poison()).count() * TransformerMain.OUTPUTS;
    long poison = written.values().stream().filter(Input::poison).count();
    while (System.nanoTime() < deadline) {
      Set<String> distinct = new HashSet<>();
      for (Output o : read(bootstrap, topic, "read_committed")) {
        distinct.add(o.input() + "/" + o.idx());
      }
      if (distinct.size() >= expected && deadLetters(ds).size() >= poison) {
        return true;
      }
      Thread.sleep(1_000);
    }
    return false;
  }

  /** The message ids of the transformers' dead letters (one entry per letter). */
  private static List<UUID> deadLetters(HikariDataSource ds) throws Exception {
    List<UUID> ids = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT message_id FROM postbox_dead_letter")) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  private Result check(
      String bootstrap,
      String topic,
      Map<UUID, Input> written,
      HikariDataSource ds,
      long recoveryMs,
      boolean drained,
      long seconds)
      throws Exception {
    List<Output> committed = read(bootstrap, topic, "read_committed");
    long uncommitted = read(bootstrap, topic, "read_uncommitted").size();
    TransformCheck.Tally t =
        TransformCheck.check(written, TransformerMain.OUTPUTS, committed, deadLetters(ds));
    Map<String, Integer> faults = new TreeMap<>();
    fired.forEach((k, v) -> faults.put(k, v.get()));
    return new Result(
        written.size(),
        t.poison(),
        t.outputsExpected(),
        t.outputsCommitted(),
        t.lost(),
        t.duplicateOutputs(),
        t.unexpectedOutputs(),
        t.orderViolations(),
        t.poisonDeadLettered(),
        t.poisonWithOutput(),
        t.duplicateDeadLetters(),
        t.otherDeadLetters(),
        uncommitted - committed.size(),
        faults,
        recoveryMs,
        drained,
        seconds);
  }

  /** The result as text. */
  static void print(Result r, PrintStream out) {
    out.println();
    out.println(
        "transform (consume-transform-produce in Kafka transactions; "
            + TRANSFORMERS
            + " transformers halted at "
            + CrashPoints.TRANSFORM_BEFORE_COMMIT
            + " and killed -9; outputs read read_committed):");
    out.printf(
        "  inputs %d (poison %d), outputs expected %d, committed outputs read %d, aborted outputs"
            + " seen read_uncommitted %d%n",
        r.inputs(), r.poison(), r.outputsExpected(), r.outputsCommitted(), r.abortedOutputsSeen());
    out.printf(
        "  faults fired %s, %d s, recovery %d ms%n", r.faultsFired(), r.seconds(), r.recoveryMs());
    out.printf(
        "  lost outputs %d, duplicate outputs %d, unexpected outputs %d, order violations %d,"
            + " poison dead-lettered %d of"
            + " %d, poison with output %d, duplicate dead letters %d, other dead letters %d,"
            + " drained %s%n",
        r.lost(),
        r.duplicateOutputs(),
        r.unexpectedOutputs(),
        r.orderViolations(),
        r.poisonDeadLettered(),
        r.poison(),
        r.poisonWithOutput(),
        r.duplicateDeadLetters(),
        r.otherDeadLetters(),
        r.drained());
    out.println(
        "  result: "
            + (r.violations() > 0 ? "VIOLATION" : r.inconclusive() ? "INCONCLUSIVE" : "OK"));
  }
}
