package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A dedicated embedded server (not the shared one), since this test restarts it. */
@Tag("integration")
class PostgresServerTest {

  @Test
  void durableSettingsRestartKeepsDataAndCloseDeletesIt() throws Exception {
    Path dataDir;
    try (PostgresServer pg = PostgresServer.embedded()) {
      assertThatThrownBy(pg::jdbcUrl).isInstanceOf(IllegalStateException.class);
      pg.start();
      assertThat(pg.isRunning()).isTrue();
      assertThat(pg.lastStartupTime()).isPresent();
      dataDir = pg.dataDirectory().orElseThrow();
      String url = pg.jdbcUrl();
      assertThat(url).startsWith("jdbc:postgresql://127.0.0.1:").contains("user=postgres");

      try (Connection c = DriverManager.getConnection(url)) {
        assertThat(show(c, "fsync")).isEqualTo("on");
        assertThat(show(c, "synchronous_commit")).isEqualTo("on");
        assertThat(show(c, "wal_level")).isEqualTo("logical");
        assertThat(show(c, "max_replication_slots")).isEqualTo("10");
        assertThat(show(c, "max_connections")).isEqualTo("300");
        assertThat(show(c, "server_version")).startsWith("18.");
      }

      String schema = pg.createSchema("Restart Test!");
      assertThat(schema).matches("restart_test__[a-z0-9]{8}");
      try (HikariDataSource ds = pg.dataSource(schema, 2)) {
        assertThat(ds.getMaximumPoolSize()).isEqualTo(2);
        try (Connection c = ds.getConnection();
            Statement s = c.createStatement()) {
          s.execute("CREATE TABLE t (v text)");
          s.execute("INSERT INTO t VALUES ('kept')");
        }

        pg.restart();
        assertThat(pg.jdbcUrl()).isEqualTo(url); // same port

        // The committed row survived. A pooled connection from before the restart fails once
        // (as in production); the pool then replaces it.
        awaitQuery(ds, "SELECT v FROM t", "kept");

        // terminateBackends kills the pool's connections; the pool replaces them
        assertThat(pg.terminateBackends("postbox-" + schema)).isPositive();
        awaitQuery(ds, "SELECT v FROM t", "kept");
      }
    }
    assertThat(Files.exists(dataDir)).isFalse();
  }

  @Test
  void crashKillsEveryServerProcessAndTheNextStartRecovers() throws Exception {
    try (PostgresServer pg = PostgresServer.embedded()) {
      pg.start();
      Path data = pg.dataDirectory().orElseThrow();
      long postmaster = Long.parseLong(Files.readAllLines(data.resolve("postmaster.pid")).get(0));
      String schema = pg.createSchema("crash");
      try (HikariDataSource ds = pg.dataSource(schema, 2)) {
        try (Connection c = ds.getConnection();
            Statement s = c.createStatement()) {
          s.execute("CREATE TABLE t (v text)");
          s.execute("INSERT INTO t VALUES ('kept')");
        }
        java.util.List<ProcessHandle> processes =
            ProcessHandle.of(postmaster).orElseThrow().descendants().toList();
        assertThat(processes).isNotEmpty();

        pg.crash();

        assertThat(pg.isRunning()).isFalse();
        assertThat(ProcessHandle.of(postmaster).map(ProcessHandle::isAlive))
            .isNotEqualTo(Optional.of(true));
        assertThat(processes).noneMatch(ProcessHandle::isAlive);
        pg.start();
        awaitQuery(ds, "SELECT v FROM t", "kept");
        // a crash, not a shutdown: the server had to recover
        assertThat(Files.readString(data.getParent().resolve("postgres.log")))
            .contains("automatic recovery in progress");
      }
    }
  }

  @Test
  void externalServerRefusesLifecycleOperations() {
    PostgresServer external =
        PostgresServer.external(
            "jdbc:postgresql://db.example:5432/app?sslmode=disable",
            Optional.of("alice"),
            Optional.of("s3cret&x"));
    assertThat(external.isExternal()).isTrue();
    assertThat(external.jdbcUrl())
        .isEqualTo(
            "jdbc:postgresql://db.example:5432/app?sslmode=disable&user=alice&password=s3cret%26x");
    assertThat(external.jdbcUrl("s1")).endsWith("&currentSchema=s1");
    assertThatThrownBy(external::restart)
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("POSTBOX_PG_URL");
    assertThatThrownBy(external::crash).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> external.jdbcUrl("x; drop"))
        .isInstanceOf(IllegalArgumentException.class);

    PostgresServer userInUrl =
        PostgresServer.external(
            "jdbc:postgresql://h/db?user=bob", Optional.empty(), Optional.empty());
    assertThat(userInUrl.user()).isEqualTo("bob");
    assertThat(userInUrl.jdbcUrl()).isEqualTo("jdbc:postgresql://h/db?user=bob");
  }

  private static String show(Connection c, String setting) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static void awaitQuery(HikariDataSource ds, String sql, String expected) {
    await()
        .atMost(Duration.ofSeconds(30))
        .ignoreExceptions()
        .untilAsserted(() -> assertThat(queryString(ds, sql)).isEqualTo(expected));
  }

  private static String queryString(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
