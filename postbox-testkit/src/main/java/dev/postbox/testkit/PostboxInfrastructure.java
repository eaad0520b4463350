package dev.postbox.testkit;

import dev.postbox.testkit.internal.InfrastructureSettings;
import dev.postbox.testkit.internal.Shutdown;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka broker and the PostgreSQL server that all tests of one JVM share, each started on first
 * use and closed by a JVM shutdown hook (nothing is started if nothing is used).
 *
 * <p>By default both are embedded: a {@link KafkaBroker#embedded()} broker and a {@link
 * PostgresServer#embedded()} server. Environment variables select external servers instead: {@code
 * POSTBOX_KAFKA_BOOTSTRAP} (bootstrap servers) a Kafka broker, and {@code POSTBOX_PG_URL} (a JDBC
 * URL, with optional {@code POSTBOX_PG_USER} and {@code POSTBOX_PG_PASSWORD}) a PostgreSQL server.
 * Tests that kill or restart an external server fail with {@link UnsupportedOperationException}.
 *
 * <p>A server that failed to start is not tried again in the same JVM: later calls fail at once
 * with the first failure as the cause. Before each test, {@link PostboxExtension} restarts (or
 * resumes) an embedded server that an earlier test killed, stopped or paused and left so.
 *
 * <p>Thread-safe.
 */
public final class PostboxInfrastructure {

  private static final Logger LOG = LoggerFactory.getLogger(PostboxInfrastructure.class);

  private static final PostboxInfrastructure SHARED =
      new PostboxInfrastructure(InfrastructureSettings.fromEnvironment(System.getenv()));

  private final InfrastructureSettings settings;
  private final Lazy<KafkaBroker> kafka;
  private final Lazy<PostgresServer> postgres;

  private PostboxInfrastructure(InfrastructureSettings settings) {
    this.settings = settings;
    this.kafka =
        new Lazy<>(
            "Kafka broker",
            () ->
                settings
                    .kafkaBootstrap()
                    .map(KafkaBroker::external)
                    .orElseGet(KafkaBroker::embedded),
            KafkaBroker::start);
    this.postgres =
        new Lazy<>(
            "PostgreSQL server",
            () ->
                settings
                    .externalPostgres()
                    .map(pg -> PostgresServer.external(pg.url(), pg.user(), pg.password()))
                    .orElseGet(PostgresServer::embedded),
            PostgresServer::start);
  }

  /** The infrastructure of this JVM. */
  public static PostboxInfrastructure shared() {
    return SHARED;
  }

  /**
   * The shared Kafka broker, started.
   *
   * @throws InfrastructureStartupException if it cannot be started (now or earlier)
   */
  public KafkaBroker kafka() {
    return kafka.get();
  }

  /**
   * The shared PostgreSQL server, started.
   *
   * @throws InfrastructureStartupException if it cannot be started (now or earlier)
   */
  public PostgresServer postgres() {
    return postgres.get();
  }

  /**
   * Brings the servers that were started back to a usable state before the next test: starts an
   * embedded broker or database that a previous test killed or stopped and left so, and resumes a
   * paused broker. Servers not started yet stay so.
   */
  void heal() {
    kafka.ifStarted(broker -> {
      if (broker.isPaused()) {
        LOG.warn("Resuming the shared Kafka broker, which an earlier test left paused");
        broker.resume();
      }
      if (!broker.isRunning()) {
        LOG.warn("Restarting the shared Kafka broker, which an earlier test left down");
        broker.start();
      }
    });
    postgres.ifStarted(pg -> {
      if (!pg.isRunning()) {
        LOG.warn("Restarting the shared PostgreSQL server, which an earlier test left down");
        pg.start();
      }
    });
  }

  /** Whether the Kafka broker is external (set by {@code POSTBOX_KAFKA_BOOTSTRAP}). */
  public boolean isKafkaExternal() {
    return settings.kafkaBootstrap().isPresent();
  }

  /** Whether the PostgreSQL server is external (set by {@code POSTBOX_PG_URL}). */
  public boolean isPostgresExternal() {
    return settings.externalPostgres().isPresent();
  }

  /** Creates, starts and remembers one server; closes it at JVM exit. */
  private static final class Lazy<T extends AutoCloseable> {
    private final String what;
    private final Supplier<T> factory;
    private final Consumer<T> starter;
    private T value;
    private Optional<RuntimeException> failure = Optional.empty();

    Lazy(String what, Supplier<T> factory, Consumer<T> starter) {
      this.what = what;
      this.factory = factory;
      this.starter = starter;
    }

    synchronized T get() {
      if (value != null) {
        return value;
      }
      if (failure.isPresent()) {
        throw new InfrastructureStartupException(
            "The shared " + what + " failed to start earlier in this JVM", failure.get());
      }
      try {
        T server = factory.get();
        Shutdown.runOnExit(() -> closeQuietly(server));
        starter.accept(server);
        value = server;
        return server;
      } catch (RuntimeException e) {
        failure = Optional.of(e);
        throw e;
      }
    }

    synchronized void ifStarted(Consumer<T> action) {
      if (value != null) {
        action.accept(value);
      }
    }

    private static void closeQuietly(AutoCloseable server) {
      try {
        server.close();
      } catch (Exception e) {
        throw new IllegalStateException("cannot close " + server, e);
      }
    }
  }
}
