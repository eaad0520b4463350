package dev.postbox.bench.internal;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostboxInfrastructure;
import dev.postbox.testkit.PostgresServer;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * What every benchmark group shares: the infrastructure (the test kit's embedded PostgreSQL with
 * synchronous commit and embedded KRaft Kafka, or external servers), fresh schemas with the Postbox
 * tables, fresh topics, the 200-byte payloads and the producer settings. Closes the pools it made.
 * Not thread-safe (one benchmark runs at a time).
 */
public final class BenchEnv implements AutoCloseable {

  /** Size of every payload, in bytes (the default). */
  public static final int PAYLOAD_BYTES = 200;

  /** Distinct ordering keys of the generated messages. */
  public static final int KEYS = 1_000;

  private static final AtomicInteger SEQ = new AtomicInteger();

  private final PostgresServer pg;
  private final java.util.function.Supplier<Kafka> kafka;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  private BenchEnv(PostgresServer pg, java.util.function.Supplier<Kafka> kafka) {
    this.pg = pg;
    this.kafka = kafka;
  }

  /** Starts (or connects to) the shared infrastructure. */
  public static BenchEnv start() {
    PostboxInfrastructure infra = PostboxInfrastructure.shared();
    Kafka kafka = new OnBroker(infra.kafka());
    return new BenchEnv(infra.postgres(), () -> kafka);
  }

  /**
   * The same PostgreSQL server with {@code cluster} (started) as the Kafka: topics are created on
   * it with its replication factor (3 on three brokers) and its {@code min.insync.replicas}. The
   * returned environment closes only the pools it made, not the cluster nor this environment.
   */
  public BenchEnv onCluster(KafkaCluster cluster) {
    Kafka onCluster = new OnCluster(cluster);
    return new BenchEnv(pg, () -> onCluster);
  }

  /** Where the topics live: the test kit's broker or a cluster. */
  private interface Kafka {
    String bootstrapServers();

    void createTopic(String name, int partitions, Map<String, String> config);
  }

  private record OnBroker(KafkaBroker broker) implements Kafka {
    @Override
    public String bootstrapServers() {
      return broker.bootstrapServers();
    }

    @Override
    public void createTopic(String name, int partitions, Map<String, String> config) {
      broker.createTopic(name, partitions, config);
    }
  }

  private record OnCluster(KafkaCluster cluster) implements Kafka {
    @Override
    public String bootstrapServers() {
      return cluster.bootstrapServers();
    }

    @Override
    public void createTopic(String name, int partitions, Map<String, String> config) {
      cluster.createTopic(name, partitions, config);
    }
  }

  /** PostgreSQL only, for benchmarks of another broker: the Kafka methods throw. */
  public static BenchEnv withoutKafka() {
    return new BenchEnv(
        PostboxInfrastructure.shared().postgres(),
        () -> {
          throw new IllegalStateException("this benchmark environment has no Kafka broker");
        });
  }

  /** The PostgreSQL server. */
  public PostgresServer postgres() {
    return pg;
  }

  /** The PostgreSQL server's JDBC URL (with the user), e.g. for a replication connection. */
  public String jdbcUrl() {
    return pg.jdbcUrl();
  }

  /** The Kafka bootstrap servers. */
  public String bootstrap() {
    return kafka.get().bootstrapServers();
  }

  /** A new schema with the Postbox tables and a pool of {@code poolSize} connections on it. */
  public Db database(String prefix, int poolSize) {
    Db db = emptySchema(prefix, poolSize);
    HikariDataSource ds = db.dataSource();
    PostboxMigrations.migrate(ds);
    execute(
        ds,
        "CREATE TABLE bench_order (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            + " customer text NOT NULL, amount integer NOT NULL,"
            + " created_at timestamptz NOT NULL DEFAULT now())",
        "CREATE TABLE bench_effect (consumer text NOT NULL, message_id uuid NOT NULL, k text)",
        // the outbox row's columns without its indexes, constraints and trigger (WriteBench)
        "CREATE TABLE bench_bare_row (LIKE postbox_outbox INCLUDING DEFAULTS INCLUDING IDENTITY)");
    return db;
  }

  /**
   * A new, empty schema and a pool of {@code poolSize} connections on it (closed with this), for a
   * bench that migrates it itself.
   */
  public Db emptySchema(String prefix, int poolSize) {
    String schema = pg.createSchema("bench_" + prefix);
    HikariDataSource ds = pg.dataSource(schema, poolSize);
    closeables.add(ds);
    return new Db(schema, ds);
  }

  /** A new topic, unique in this run. */
  public String topic(String prefix, int partitions) {
    String topic =
        "bench." + prefix + "." + ProcessHandle.current().pid() + "." + SEQ.incrementAndGet();
    kafka.get().createTopic(topic, partitions, Map.of());
    return topic;
  }

  /**
   * A new topic that no benchmark consumer reads, with one probe record written to each partition
   * before it is returned. On this broker the first appends to a fresh topic sometimes fail with
   * NotLeaderOrFollower, after which an idempotent producer can stall for its whole delivery
   * timeout on OutOfOrderSequence; the probes (not idempotent) take that hit outside the timed
   * part.
   */
  public String primedTopic(String prefix, int partitions) {
    return primedTopic(prefix, partitions, Map.of());
  }

  /**
   * {@link #primedTopic(String, int)} with a topic configuration (for example {@code
   * message.timestamp.type=LogAppendTime}).
   */
  public String primedTopic(String prefix, int partitions, Map<String, String> config) {
    String topic =
        "bench." + prefix + "." + ProcessHandle.current().pid() + "." + SEQ.incrementAndGet();
    kafka.get().createTopic(topic, partitions, config);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(fillConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
      List<Future<?>> probes = new ArrayList<>();
      for (int p = 0; p < partitions; p++) {
        probes.add(
            producer.send(
                new org.apache.kafka.clients.producer.ProducerRecord<>(
                    topic, p, null, "probe".getBytes(java.nio.charset.StandardCharsets.UTF_8))));
      }
      Futures.awaitAll(probes);
    }
    return topic;
  }

  /** The {@code i}-th benchmark message for {@code topic}: key {@code i mod 1000}, 200 bytes. */
  public static Message message(String topic, long i) {
    return Message.builder(topic, "order.created")
        .key("key-" + (i % KEYS))
        .jsonPayload(payload(i))
        .build();
  }

  /** A JSON payload of exactly {@link #PAYLOAD_BYTES} bytes. */
  public static String payload(long i) {
    String head = "{\"n\":" + i + ",\"pad\":\"";
    String tail = "\"}";
    return head + "x".repeat(PAYLOAD_BYTES - head.length() - tail.length()) + tail;
  }

  /** Writes {@code n} messages to the outbox of {@code db}, 500 per transaction. */
  public static void seedOutbox(Db db, String topic, int n) {
    Outbox outbox = Outbox.postgres();
    for (int from = 0; from < n; from += 500) {
      List<Message> batch = new ArrayList<>();
      for (int i = from; i < Math.min(n, from + 500); i++) {
        batch.add(message(topic, i));
      }
      outbox.inTransaction(
          db.dataSource(),
          tx -> {
            tx.writeAll(batch);
            return null;
          });
    }
  }

  /**
   * The producer settings of {@code KafkaRelayPublisher}'s defaults (acks=all, idempotence, linger
   * 5 ms, 128 KiB batches, lz4), so the raw producer runs with the same settings.
   */
  public Map<String, Object> producerConfig() {
    return ProducerSettings.forBootstrap(bootstrap());
  }

  /** A producer with {@link #producerConfig()}. The caller closes it. */
  public KafkaProducer<byte[], byte[]> producer() {
    return new KafkaProducer<>(
        producerConfig(), new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** Puts {@code n} benchmark messages on {@code topic} (not timed: the consumers' backlog). */
  public void fillTopic(String topic, int n) {
    // Not idempotent: on this broker a fresh topic's first appends sometimes fail with
    // NotLeaderOrFollower, and the idempotent producer's retry then stalls on
    // OutOfOrderSequence. One request in flight keeps the order; a retry may duplicate a record,
    // which the consumer benchmarks count like any other.
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(fillConfig(), new ByteArraySerializer(), new ByteArraySerializer())) {
      List<Future<?>> pending = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        pending.add(producer.send(KafkaRecords.toRecord(message(topic, i))));
        if (pending.size() >= 10_000) {
          Futures.awaitAll(pending);
        }
      }
      Futures.awaitAll(pending);
    }
  }

  /** Not idempotent, one request in flight (order kept): for untimed fills and probes. */
  private Map<String, Object> fillConfig() {
    Map<String, Object> config = producerConfig();
    config.put("enable.idempotence", false);
    config.put("max.in.flight.requests.per.connection", 1);
    return config;
  }

  /** Runs SQL statements in auto-commit mode. */
  public static void execute(javax.sql.DataSource ds, String... sql) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      for (String q : sql) {
        s.execute(q);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("SQL failed: " + e.getMessage(), e);
    }
  }

  /**
   * Waits until {@code progress} reaches {@code target}, failing after {@code timeout} without
   * progress.
   */
  public static void awaitCount(String what, LongSupplier progress, long target, Duration timeout)
      throws InterruptedException {
    long last = -1;
    long lastChange = System.nanoTime();
    while (true) {
      long now = progress.getAsLong();
      if (now >= target) {
        return;
      }
      if (now != last) {
        last = now;
        lastChange = System.nanoTime();
      } else if (System.nanoTime() - lastChange > timeout.toNanos()) {
        throw new IllegalStateException(
            what + ": stuck at " + now + " of " + target + " for " + timeout);
      }
      Thread.sleep(5);
    }
  }

  @Override
  public void close() {
    for (AutoCloseable c : closeables.reversed()) {
      try {
        c.close();
      } catch (Exception e) {
        // closing pools at the end of a run: nothing left to protect
      }
    }
    closeables.clear();
  }

  /**
   * A schema with the Postbox tables, {@code bench_order} (the business table) and {@code
   * bench_effect} (the consumers' one-row effect).
   *
   * @param schema the schema name
   * @param dataSource a pool on it
   */
  public record Db(String schema, HikariDataSource dataSource) {}
}
