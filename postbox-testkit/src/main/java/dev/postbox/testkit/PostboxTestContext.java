package dev.postbox.testkit;

import com.zaxxer.hikari.HikariDataSource;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What one test gets from the shared {@link PostboxInfrastructure}: its own PostgreSQL schema with
 * a connection pool scoped to it, and unique Kafka topics.
 *
 * <p>{@link PostboxExtension} (via {@link PostboxTest}) creates one per test and closes it after
 * the test; {@link #create(String)} creates one anywhere else. Everything is lazy: a test that only
 * uses Kafka never starts PostgreSQL, and the other way round. The schema is created on the first
 * call of {@link #schema()}, {@link #dataSource()} or {@link #jdbcUrl()}; its name starts with the
 * context's name. {@link #close()} closes the pools but keeps the schema and the topics, so that
 * they can be inspected after a failure.
 *
 * <p>Thread-safe.
 */
public final class PostboxTestContext implements AutoCloseable {

  private static final Pattern TOPIC_BASE = Pattern.compile("[a-zA-Z0-9._-]{1,200}");
  private static final SecureRandom RANDOM = new SecureRandom();

  private final String name;
  private final PostboxInfrastructure infrastructure;
  private final List<HikariDataSource> pools = new ArrayList<>();
  private Optional<String> schema = Optional.empty();
  private Optional<HikariDataSource> dataSource = Optional.empty();
  private boolean closed;

  private PostboxTestContext(String name, PostboxInfrastructure infrastructure) {
    this.name = Objects.requireNonNull(name, "name");
    this.infrastructure = Objects.requireNonNull(infrastructure, "infrastructure");
  }

  /**
   * A context on the {@linkplain PostboxInfrastructure#shared() shared} infrastructure; first
   * restarts or resumes a shared server that an earlier test left killed, stopped or paused.
   */
  public static PostboxTestContext create(String name) {
    PostboxInfrastructure shared = PostboxInfrastructure.shared();
    shared.heal();
    return new PostboxTestContext(name, shared);
  }

  /** The name (the test method's, for contexts made by {@link PostboxExtension}). */
  public String name() {
    return name;
  }

  /** The shared PostgreSQL server (started). */
  public PostgresServer postgres() {
    return infrastructure.postgres();
  }

  /** The shared Kafka broker (started). */
  public KafkaBroker kafka() {
    return infrastructure.kafka();
  }

  /** This test's schema, created on first use. */
  public synchronized String schema() {
    ensureOpen();
    if (schema.isEmpty()) {
      schema = Optional.of(postgres().createSchema(name));
    }
    return schema.get();
  }

  /**
   * A pool of at most {@value PostgresServer#DEFAULT_POOL_SIZE} connections that use {@link
   * #schema()}; the same pool on every call, closed with this context.
   */
  public synchronized HikariDataSource dataSource() {
    ensureOpen();
    if (dataSource.isEmpty()) {
      dataSource = Optional.of(track(postgres().dataSource(schema())));
    }
    return dataSource.get();
  }

  /**
   * A new, additional pool of at most {@code maxPoolSize} connections that use {@link #schema()},
   * closed with this context.
   */
  public synchronized HikariDataSource newDataSource(int maxPoolSize) {
    ensureOpen();
    return track(postgres().dataSource(schema(), maxPoolSize));
  }

  /**
   * Creates Postbox's tables in {@link #schema()} (idempotent) with the {@link
   * dev.postbox.core.spi.SchemaMigrator} on the class path ({@code postbox-jdbc} provides it);
   * returns how many migrations were applied. {@code @PostboxTest(migrate = true)} calls it for
   * every context.
   *
   * @throws IllegalStateException if no migrator is on the class path
   */
  public int migrate() {
    dev.postbox.core.spi.SchemaMigrator migrator =
        java.util.ServiceLoader.load(
                dev.postbox.core.spi.SchemaMigrator.class,
                PostboxTestContext.class.getClassLoader())
            .findFirst()
            .orElseThrow(() ->
                new IllegalStateException(
                    "No dev.postbox.core.spi.SchemaMigrator on the class path: add the dependency"
                        + " dev.postbox:postbox-jdbc to migrate the test schema"));
    return migrator.migrate(dataSource());
  }

  /** The JDBC URL (with credentials) whose connections use {@link #schema()}. */
  public String jdbcUrl() {
    return postgres().jdbcUrl(schema());
  }

  /** The shared broker's bootstrap servers. */
  public String bootstrapServers() {
    return kafka().bootstrapServers();
  }

  /**
   * Creates a topic with one partition named {@code base} plus a unique suffix; returns the name.
   */
  public String topic(String base) {
    return topic(base, 1);
  }

  /**
   * Creates a topic with {@code partitions} partitions named {@code base} plus a unique suffix, and
   * waits until every partition has a leader.
   *
   * @return the topic's name
   */
  public String topic(String base, int partitions) {
    return topic(base, partitions, Map.of());
  }

  /**
   * Like {@link #topic(String, int)}, with topic configuration (for example {@code retention.ms}).
   */
  public String topic(String base, int partitions, Map<String, String> config) {
    if (base == null || !TOPIC_BASE.matcher(base).matches()) {
      throw new IllegalArgumentException(
          "topic base '" + base + "' must be 1-200 of [a-zA-Z0-9._-]");
    }
    String topic = base + "-" + Long.toString(RANDOM.nextLong() >>> 1, 36);
    kafka().createTopic(topic, partitions, config);
    return topic;
  }

  /** Closes this context's pools; keeps the schema and the topics. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (HikariDataSource pool : pools) {
      pool.close();
    }
    pools.clear();
  }

  @Override
  public synchronized String toString() {
    return "PostboxTestContext[" + name + schema.map(s -> ", schema " + s).orElse("") + "]";
  }

  private HikariDataSource track(HikariDataSource pool) {
    pools.add(pool);
    return pool;
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException(this + " is closed");
    }
  }
}
