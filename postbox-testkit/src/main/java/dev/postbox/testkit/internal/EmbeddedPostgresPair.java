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
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Two {@link EmbeddedPostgresServer}s, the second a streaming standby of the first. */
public final class EmbeddedPostgresPair implements PostgresPair {

  private static final Logger LOG = LoggerFactory.getLogger(PostgresPair.class);
  private static final Duration POLL = Duration.ofMillis(50);

  private final boolean synchronous;
  private final Duration timeout;
  private final EmbeddedPostgresServer primary;
  private final Path standbyDir;
  private final EmbeddedPostgresServer standby;
  private CurrentPrimaryServer current;
  private boolean closed;

  public EmbeddedPostgresPair(boolean synchronous, Duration timeout) {
    this.synchronous = synchronous;
    this.timeout = timeout;
    this.primary =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(Optional.empty(), Map.of(), timeout));
    this.standbyDir = OwnedDirectories.create("pg-standby-");
    this.standby =
        new EmbeddedPostgresServer(
            new EmbeddedPostgresServer.Settings(
                Optional.of(standbyDir),
                Map.of("hot_standby_feedback", "on", "sync_replication_slots", "on"),
                timeout));
  }

  @Override
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException("the pair is closed");
    }
    if (current != null) {
      return;
    }
    primary.start();
    try {
      execute(
          primary.jdbcUrl(),
          "SELECT pg_create_physical_replication_slot('" + PHYSICAL_SLOT + "', true)");
      Path data = standbyDir.resolve("data");
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
              + "'\n");
      standby.start();
      awaitTrue(
          primary.jdbcUrl(),
          "SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = '"
              + STANDBY_NAME
              + "' AND state = 'streaming'",
          "the standby to stream");
      execute(
          primary.jdbcUrl(),
          "ALTER SYSTEM SET synchronized_standby_slots = '" + PHYSICAL_SLOT + "'");
      if (synchronous) {
        execute(
            primary.jdbcUrl(),
            "ALTER SYSTEM SET synchronous_standby_names = '" + STANDBY_NAME + "'");
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
    } catch (IOException | RuntimeException e) {
      throw new InfrastructureStartupException(
          "The PostgreSQL standby did not start: " + EmbeddedPostgresServer.describe(e), e);
    }
    current = new CurrentPrimaryServer(primary.port(), standby.port(), "postgres", primary.user());
    LOG.info(
        "PostgreSQL pair: primary 127.0.0.1:{}, {} standby 127.0.0.1:{}",
        primary.port(),
        synchronous ? "synchronous" : "asynchronous",
        standby.port());
  }

  @Override
  public PostgresServer primary() {
    return primary;
  }

  @Override
  public PostgresServer standby() {
    return standby;
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
    primary.crash();
  }

  @Override
  public void promote() {
    execute(standby.jdbcUrl(), "SELECT pg_promote(true, " + timeout.toSeconds() + ")");
    awaitTrue(standby.jdbcUrl(), "SELECT NOT pg_is_in_recovery()", "the standby to be promoted");
    LOG.info("PostgreSQL 127.0.0.1:{} promoted", standby.port());
  }

  @Override
  public void awaitReplayed(Duration within) {
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
      standby.close();
    } finally {
      try {
        primary.close();
      } finally {
        OwnedDirectories.delete(standbyDir);
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
  public String toString() {
    return "PostgresPair[primary " + primary + ", standby " + standby + "]";
  }
}
