package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import dev.postbox.testkit.PostgresPair;
import dev.postbox.testkit.PostgresServer;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Two {@link EmbeddedPostgresServer}s, one a streaming standby of the other; {@link #promote()}
 * swaps their roles and {@link #rejoin()} makes the former primary a standby again.
 */
public final class EmbeddedPostgresPair implements PostgresPair {

  private static final Logger LOG = LoggerFactory.getLogger(PostgresPair.class);
  private static final Duration POLL = Duration.ofMillis(50);

  private final boolean synchronous;
  private final Duration timeout;
  private final EmbeddedPostgresServer first;
  private final EmbeddedPostgresServer second;
  private final Optional<Path> ownedDir;
  // the roles now: first and second at start(), swapped by each promote()
  private EmbeddedPostgresServer active;
  private EmbeddedPostgresServer passive;
  private CurrentPrimaryServer current;
  private boolean closed;

  public EmbeddedPostgresPair(
      boolean synchronous,
      Duration timeout,
      Map<String, String> serverConfig,
      Optional<Path> directory) {
    this.synchronous = synchronous;
    this.timeout = timeout;
    // both servers alike, since either may be the standby: the standby's settings do nothing on a
    // primary
    Map<String, String> config = new LinkedHashMap<>(serverConfig);
    config.put("hot_standby_feedback", "on");
    config.put("sync_replication_slots", "on");
    this.ownedDir =
        directory.isPresent() ? Optional.empty() : Optional.of(OwnedDirectories.create("pg-pair-"));
    Path dir = directory.orElseGet(ownedDir::get);
    this.first =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(Optional.of(dir.resolve("a")), config, timeout));
    this.second =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(Optional.of(dir.resolve("b")), config, timeout));
    this.active = first;
    this.passive = second;
  }

  @Override
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException("the pair is closed");
    }
    if (current != null) {
      return;
    }
    first.start();
    try {
      attachStandby(first, second);
    } catch (IOException | RuntimeException e) {
      throw new InfrastructureStartupException(
          "The PostgreSQL standby did not start: " + EmbeddedPostgresServer.describe(e), e);
    }
    current = new CurrentPrimaryServer(first.port(), second.port(), "postgres", first.user());
    LOG.info(
        "PostgreSQL pair: primary 127.0.0.1:{}, {} standby 127.0.0.1:{}",
        first.port(),
        synchronous ? "synchronous" : "asynchronous",
        second.port());
  }

  /**
   * Makes {@code standby} (stopped) a streaming standby of {@code primary} (running): a physical
   * slot, a base backup into its emptied data directory, its start, then the primary's settings
   * that name it (the standby slot logical decoding waits for; synchronous_standby_names).
   */
  private void attachStandby(EmbeddedPostgresServer primary, EmbeddedPostgresServer standby)
      throws IOException {
    execute(
        primary.jdbcUrl(),
        "SELECT pg_create_physical_replication_slot('"
            + PHYSICAL_SLOT
            + "', true) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '"
            + PHYSICAL_SLOT
            + "')");
    Path data = standby.dataDirectory().orElseThrow();
    Shutdown.deleteRecursively(data);
    BaseBackup.take(primary.jdbcUrl(), primary.dataDirectory().orElseThrow(), data);
    BaseBackup.configureStandby(
        data,
        "primary_conninfo = 'host=127.0.0.1 port="
            + primary.port()
            + " user="
            + primary.user()
            + " dbname=postgres application_name="
            + STANDBY_NAME
            + "'\nprimary_slot_name = '"
            + PHYSICAL_SLOT
            + "'\n"
            // copied from a primary that names its own standby: this server, once promoted,
            // waits for no standby until one is attached to it
            + "synchronous_standby_names = ''\nsynchronized_standby_slots = ''\n");
    standby.start();
    awaitTrue(
        primary.jdbcUrl(),
        "SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = '"
            + STANDBY_NAME
            + "' AND state = 'streaming'",
        "the standby to stream");
    execute(
        primary.jdbcUrl(), "ALTER SYSTEM SET synchronized_standby_slots = '" + PHYSICAL_SLOT + "'");
    if (synchronous) {
      execute(
          primary.jdbcUrl(), "ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY_NAME + "'");
    }
    execute(primary.jdbcUrl(), "SELECT pg_reload_conf()");
    if (synchronous) {
      awaitTrue(
          primary.jdbcUrl(),
          "SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = '"
              + STANDBY_NAME
              + "' AND sync_state = 'sync'",
          "the standby to be synchronous");
    }
  }

  @Override
  public PostgresServer primary() {
    return first;
  }

  @Override
  public PostgresServer standby() {
    return second;
  }

  @Override
  public synchronized PostgresServer activePrimary() {
    return active;
  }

  @Override
  public synchronized PostgresServer current() {
    if (current == null) {
      throw new IllegalStateException("the pair was never started: call start()");
    }
    return current;
  }

  @Override
  public void killPrimary() {
    activePrimary().crash();
  }

  @Override
  public void promote() {
    EmbeddedPostgresServer promoted;
    synchronized (this) {
      promoted = passive;
    }
    execute(promoted.jdbcUrl(), "SELECT pg_promote(true, " + timeout.toSeconds() + ")");
    awaitTrue(promoted.jdbcUrl(), "SELECT NOT pg_is_in_recovery()", "the standby to be promoted");
    synchronized (this) {
      passive = active;
      active = promoted;
    }
    LOG.info("PostgreSQL 127.0.0.1:{} promoted", promoted.port());
  }

  @Override
  public synchronized void rejoin() {
    if (closed) {
      throw new IllegalStateException("the pair is closed");
    }
    if (current == null) {
      throw new IllegalStateException("the pair was never started: call start()");
    }
    long t0 = System.nanoTime();
    if (passive.isRunning()) {
      // a former primary must never run beside the promoted one: it goes down before it is rebuilt
      passive.crash();
    }
    try {
      attachStandby(active, passive);
    } catch (IOException e) {
      throw new IllegalStateException(
          "the former primary did not rejoin as a standby: " + EmbeddedPostgresServer.describe(e),
          e);
    }
    LOG.info(
        "PostgreSQL 127.0.0.1:{} rejoined as a standby of 127.0.0.1:{} in {} ms",
        passive.port(),
        active.port(),
        Duration.ofNanos(System.nanoTime() - t0).toMillis());
  }

  @Override
  public void awaitReplayed(Duration within) {
    EmbeddedPostgresServer primary;
    EmbeddedPostgresServer standby;
    synchronized (this) {
      primary = active;
      standby = passive;
    }
    String lsn = query(primary.jdbcUrl(), "SELECT pg_current_wal_lsn()::text");
    awaitTrue(
        standby.jdbcUrl(),
        "SELECT pg_last_wal_replay_lsn() >= '" + lsn + "'::pg_lsn",
        "the standby to replay up to " + lsn,
        within);
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      second.close();
    } finally {
      try {
        first.close();
      } finally {
        ownedDir.ifPresent(OwnedDirectories::delete);
      }
    }
  }

  private void awaitTrue(String url, String sql, String what) {
    awaitTrue(url, sql, what, timeout);
  }

  /** Polls a condition of the server's state (infrastructure set-up, not a test's assertion). */
  private static void awaitTrue(String url, String sql, String what, Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    SQLException last = null;
    while (System.nanoTime() < deadline) {
      try (Connection c = DriverManager.getConnection(url);
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(sql)) {
        if (rs.next() && rs.getBoolean(1)) {
          return;
        }
      } catch (SQLException e) {
        last = e;
      }
      try {
        Thread.sleep(POLL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted waiting for " + what, e);
      }
    }
    throw new IllegalStateException("timed out after " + within + " waiting for " + what, last);
  }

  private static void execute(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  private static String query(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized String toString() {
    return "PostgresPair[primary " + active + ", standby " + passive + "]";
  }
}
