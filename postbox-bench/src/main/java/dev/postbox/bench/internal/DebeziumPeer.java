package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.testkit.ChildJvm;
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.io.File;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The CDC baseline: Debezium's embedded PostgreSQL connector (pgoutput) streaming new rows of the
 * Postbox outbox table to Kafka with the same producer settings.
 *
 * <p>It runs in a child JVM: Debezium 3.6 brings Kafka Connect 4.3, which needs kafka-clients 4.3
 * (4.4, the project's version, moved classes Connect uses), so the child's class path swaps in the
 * kafka-clients jar that the build copies to {@code target/peer-lib}. The parent starts it, waits
 * until its replication slot is active, writes the rows, and reads the child's result line; for
 * latency runs ({@link #startStreaming}) the child streams until it is killed, and the parent reads
 * the topic itself.
 */
public final class DebeziumPeer {

  private static final String RESULT = "DEBEZIUM-RESULT ";

  /**
   * The child's mode for every streaming race (the {@code relay} group, the CDC latency race, the
   * end-to-end race): Debezium at its best for streaming, {@link #LOW_LATENCY_SETTINGS}. A 1 ms
   * {@code poll.interval.ms} (the wait of both the streaming loop after empty reads and the
   * engine's queue poll; its default, 500 ms, is a latency floor and caps a stream at one batch per
   * poll), the default batch (2,048, about the relay's 2,000) and queue (8,192), and a producer
   * that does not linger ({@code linger.ms=0}: a batch's sends are awaited before the next, so a
   * linger only delays them), otherwise the relay's settings.
   */
  static final String LOW_LATENCY = "low-latency";

  /**
   * {@link #LOW_LATENCY}'s settings as every figure's note names them: the one definition of
   * "Debezium at its best" for streaming races.
   */
  static final String LOW_LATENCY_SETTINGS =
      "Debezium embedded 3.6.1, child JVM (pgoutput; poll.interval.ms=1, max.batch.size=2048,"
          + " max.queue.size=8192; producer acks=all, idempotent, linger 0, lz4; a batch's sends"
          + " acknowledged before the next)";

  private final BenchEnv env;
  private final BenchConfig config;

  DebeziumPeer(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /**
   * Runs the child in its {@link #LOW_LATENCY} configuration, writes the rows, returns events/s
   * from the first change event to last ack.
   */
  Measurement run() throws InterruptedException {
    int n = config.relayEvents();
    Db db = env.database("debezium", 4);
    String topic = env.primedTopic("debezium", 6);
    String slot = "bench_" + db.schema().toLowerCase(java.util.Locale.ROOT);
    try (ChildJvm child = child(db, slot, Integer.toString(n), LOW_LATENCY)) {
      child.start();
      awaitSlotActive(db, slot, child);
      BenchEnv.seedOutbox(db, topic, n);
      String line = child.awaitLogLine(l -> l.startsWith(RESULT), Duration.ofMinutes(5));
      double rate = Double.parseDouble(line.substring(RESULT.length()).trim());
      return Measurement.of("debezium_events_per_s", rate, "events/s")
          .note(
              LOW_LATENCY_SETTINGS
                  + ": "
                  + n
                  + " outbox inserts streamed as they are written and sent to Kafka, first change"
                  + " event to last ack; publishes payload, key and id only (less work than the"
                  + " relay's CloudEvents mapping); rows are not deleted");
    }
  }

  /**
   * Drains a backlog already written while {@code slot} (and its publication {@code slot_pub})
   * existed: starts the child on the slot and returns events/s from its first change event to its
   * last broker ack (the child's start-up is not counted).
   */
  Measurement drainPrewritten(Db db, String slot, int n) throws InterruptedException {
    try (ChildJvm child = child(db, slot, Integer.toString(n), "prewritten")) {
      child.start();
      String line = child.awaitLogLine(l -> l.startsWith(RESULT), Duration.ofMinutes(10));
      double rate = Double.parseDouble(line.substring(RESULT.length()).trim());
      return Measurement.of("cdc_debezium_drain_events_per_s", rate, "events/s")
          .note(
              "Debezium embedded 3.6.1 (child JVM, pgoutput) draining the same "
                  + n
                  + " pre-written outbox inserts from its own slot, sent to Kafka with the relay's"
                  + " producer settings; first change event to last ack (its start-up not"
                  + " counted); publishes payload, key and id only and marks nothing (less work"
                  + " than the relay)");
    }
  }

  /**
   * Starts the child streaming {@code db}'s outbox inserts from a new slot {@code slot} (and
   * publication {@code slot_pub}, both created by Debezium) in its low-latency configuration
   * ({@link #LOW_LATENCY}), and returns once the slot is active. It streams until the caller closes
   * the child (which kills it; the slot is then left to drop).
   */
  ChildJvm startStreaming(Db db, String slot) throws InterruptedException {
    ChildJvm child = child(db, slot, Long.toString(Long.MAX_VALUE), LOW_LATENCY);
    try {
      child.start();
      awaitSlotActive(db, slot, child);
      return child;
    } catch (RuntimeException | InterruptedException e) {
      child.close();
      throw e;
    }
  }

  /**
   * The Debezium child JVM (not started) on {@code db}'s schema and {@code slot}: the connection,
   * the broker, then {@code tail} (how many events, and a mode if any).
   */
  private ChildJvm child(Db db, String slot, String... tail) {
    URI uri = URI.create(env.postgres().jdbcUrl().substring("jdbc:".length()));
    List<String> args =
        new ArrayList<>(
            List.of(
                uri.getHost(),
                Integer.toString(uri.getPort()),
                uri.getPath().substring(1),
                env.postgres().user(),
                env.postgres().password().orElse(""),
                db.schema(),
                slot,
                env.bootstrap()));
    args.addAll(List.of(tail));
    return ChildJvm.builder(DebeziumPeer.class)
        .classPath(childClassPath())
        .jvmOptions("-Xmx512m")
        .args(args)
        .build();
  }

  /** This JVM's class path with the kafka-clients jar replaced by the one Connect 4.3 needs. */
  private static String childClassPath() {
    Path peerLib;
    try {
      Path code =
          Path.of(DebeziumPeer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      peerLib = code.getParent().resolve("peer-lib");
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    List<String> clients;
    try (Stream<Path> files = Files.list(peerLib)) {
      clients = files.map(Path::toString).filter(f -> f.contains("kafka-clients")).toList();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(
          peerLib + " is missing: build postbox-bench with Maven (it copies kafka-clients there)",
          e);
    }
    String own =
        Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(e -> !Path.of(e).getFileName().toString().startsWith("kafka-clients-"))
            .collect(Collectors.joining(File.pathSeparator));
    return String.join(File.pathSeparator, clients) + File.pathSeparator + own;
  }

  private static void awaitSlotActive(Db db, String slot, ChildJvm child)
      throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    while (System.nanoTime() < deadline) {
      if (!child.isAlive()) {
        throw new IllegalStateException("the Debezium child exited:\n" + child.logTail(40));
      }
      try (Connection c = db.dataSource().getConnection();
          PreparedStatement ps =
              c.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
        ps.setString(1, slot);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && rs.getBoolean(1)) {
            return;
          }
        }
      } catch (SQLException e) {
        throw new IllegalStateException("cannot read pg_replication_slots", e);
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("Debezium did not start streaming:\n" + child.logTail(40));
  }

  /**
   * The child: host, port, database, user, password, schema, slot, bootstrap, events. Streams the
   * outbox table's inserts to Kafka until {@code events} were acknowledged, then prints {@code
   * DEBEZIUM-RESULT eventsPerSecond} and exits.
   */
  public static void main(String[] args) throws Exception {
    long n = Long.parseLong(args[8]);
    AtomicLong acked = new AtomicLong();
    AtomicLong firstSeen = new AtomicLong();
    ExecutorService runner = Executors.newSingleThreadExecutor();
    java.util.Map<String, Object> producerSettings = ProducerSettings.forBootstrap(args[7]);
    if (lowLatency(args)) {
      producerSettings.put("linger.ms", 0);
    }
    try (KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(
                producerSettings, new ByteArraySerializer(), new ByteArraySerializer());
        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine =
            DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(properties(args))
                .notifying((records, committer) -> {
                  firstSeen.compareAndSet(0, System.nanoTime());
                  List<Future<?>> sent = new ArrayList<>();
                  for (RecordChangeEvent<SourceRecord> r : records) {
                    Struct after = after(r.record());
                    if (after != null) {
                      sent.add(producer.send(toRecord(after)));
                    }
                  }
                  Futures.awaitAll(sent);
                  for (RecordChangeEvent<SourceRecord> r : records) {
                    committer.markProcessed(r);
                  }
                  committer.markBatchFinished();
                  acked.addAndGet(records.stream().filter(r -> after(r.record()) != null).count());
                })
                .build()) {
      runner.execute(engine);
      while (acked.get() < n) {
        Thread.sleep(5);
      }
      System.out.println(RESULT + Rate.since(firstSeen.get(), n));
      System.out.flush();
    }
    Runtime.getRuntime().halt(0);
  }

  private static boolean lowLatency(String[] args) {
    return args.length > 9 && LOW_LATENCY.equals(args[9]);
  }

  private static Struct after(SourceRecord record) {
    if (!(record.value() instanceof Struct value) || value.schema().field("after") == null) {
      return null;
    }
    return value.getStruct("after");
  }

  private static ProducerRecord<byte[], byte[]> toRecord(Struct after) {
    String key = after.getString("msg_key");
    ProducerRecord<byte[], byte[]> record =
        new ProducerRecord<>(
            after.getString("topic"),
            key == null ? null : key.getBytes(StandardCharsets.UTF_8),
            after.getBytes("payload"));
    record.headers().add("ce_id", after.getString("message_id").getBytes(StandardCharsets.UTF_8));
    return record;
  }

  private static Properties properties(String[] a) {
    Properties p = new Properties();
    p.setProperty("name", "bench-debezium");
    p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
    p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
    p.setProperty("offset.flush.interval.ms", "60000");
    p.setProperty("database.hostname", a[0]);
    p.setProperty("database.port", a[1]);
    p.setProperty("database.dbname", a[2]);
    p.setProperty("database.user", a[3]);
    p.setProperty("database.password", a[4]);
    p.setProperty("topic.prefix", "bench");
    p.setProperty("plugin.name", "pgoutput");
    p.setProperty("slot.name", a[6]);
    p.setProperty("slot.drop.on.stop", "true");
    p.setProperty("publication.name", a[6] + "_pub");
    boolean prewritten = a.length > 9 && "prewritten".equals(a[9]);
    p.setProperty("publication.autocreate.mode", prewritten ? "disabled" : "filtered");
    if (prewritten) {
      // its best documented configuration for throughput and latency: a 10 ms poll (the default
      // 500 ms caps it at one batch per poll), batches and queue as large as the relay's
      p.setProperty("poll.interval.ms", "10");
      p.setProperty("max.batch.size", "8192");
      p.setProperty("max.queue.size", "32768");
    }
    if (lowLatency(a)) {
      // LOW_LATENCY_SETTINGS, the one definition of Debezium at its best for streaming: the least
      // wait after an empty read of the stream and of the engine's queue (the default 500 ms is a
      // latency floor); batch and queue at their defaults (batch ~ the relay's 2,000)
      p.setProperty("poll.interval.ms", "1");
      p.setProperty("max.batch.size", "2048");
      p.setProperty("max.queue.size", "8192");
    }
    p.setProperty("table.include.list", a[5] + ".postbox_outbox");
    p.setProperty("snapshot.mode", "no_data");
    return p;
  }
}
