package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A primary with a streaming standby from a low-level base backup: rows reach the standby, a
 * failover logical slot is synchronised to it, and after {@code kill -9} of the primary and a
 * promote the multi-host pool writes to the former standby, which holds the slot; the former
 * primary rejoins as a standby, and a second failover returns to it with every acknowledged row.
 */
@Tag("integration")
class PostgresPairTest {

  private static final Duration WAIT = Duration.ofSeconds(120);

  @Test
  void standbyStreamsSynchronisesAFailoverSlotAndTakesOverAfterKillAndPromote() throws Exception {
    try (PostgresPair pair = PostgresPair.builder().synchronous(true).build()) {
      pair.start();
      PostgresServer current = pair.current();
      assertThatThrownBy(current::crash).isInstanceOf(UnsupportedOperationException.class);
      String schema = current.createSchema("pair");
      try (HikariDataSource ds = current.dataSource(schema, 2)) {
        exec(ds, "CREATE TABLE t (n int PRIMARY KEY)");
        exec(ds, "INSERT INTO t SELECT generate_series(1, 100)");
        exec(
            ds,
            "SELECT pg_create_logical_replication_slot('pair_slot', 'pgoutput', false, false,"
                + " true)");
        pair.awaitReplayed(WAIT);
        try (Connection c = DriverManager.getConnection(pair.standby().jdbcUrl(schema))) {
          assertThat(bool(c, "SELECT pg_is_in_recovery()")).isTrue();
          assertThat(longOf(c, "SELECT count(*) FROM t")).isEqualTo(100);
        }
        await()
            .atMost(WAIT)
            .until(() -> {
              // a running-xacts record lets the standby's slot catch up with the primary's
              exec(ds, "SELECT pg_log_standby_snapshot()");
              try (Connection c = DriverManager.getConnection(pair.standby().jdbcUrl())) {
                return bool(
                    c,
                    "SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name ="
                        + " 'pair_slot' AND synced AND NOT temporary");
              }
            });

        // synchronous standby: this commit returned once the standby had flushed it
        exec(ds, "INSERT INTO t VALUES (101)");
        pair.killPrimary();
        assertThat(pair.primary().isRunning()).isFalse();
        pair.promote();

        await()
            .atMost(WAIT)
            .ignoreExceptions()
            .until(() -> {
              exec(ds, "INSERT INTO t VALUES (102)");
              return true;
            });
        try (Connection c = ds.getConnection()) {
          assertThat(bool(c, "SELECT pg_is_in_recovery()")).isFalse();
          assertThat(longOf(c, "SELECT count(*) FROM t")).isEqualTo(102);
          assertThat(
                  bool(
                      c,
                      "SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name ="
                          + " 'pair_slot' AND failover"))
              .isTrue();
          assertThat(longOf(c, "SELECT inet_server_port()"))
              .isEqualTo(portOf(pair.standby().jdbcUrl()));
          exec(c, "SELECT pg_drop_replication_slot('pair_slot')");
        }

        // the former primary rejoins as a standby of the promoted one; a second failover brings
        // the first server back as the primary, with every acknowledged row
        pair.rejoin();
        assertThat(pair.activePrimary()).isSameAs(pair.standby());
        exec(ds, "INSERT INTO t VALUES (103)");
        pair.awaitReplayed(WAIT);
        try (Connection c = DriverManager.getConnection(pair.primary().jdbcUrl(schema))) {
          assertThat(bool(c, "SELECT pg_is_in_recovery()")).isTrue();
          assertThat(longOf(c, "SELECT count(*) FROM t")).isEqualTo(103);
        }
        exec(ds, "INSERT INTO t VALUES (104)"); // synchronous again: on the standby on return
        pair.killPrimary();
        assertThat(pair.standby().isRunning()).isFalse();
        pair.promote();
        assertThat(pair.activePrimary()).isSameAs(pair.primary());
        await()
            .atMost(WAIT)
            .ignoreExceptions()
            .until(() -> {
              exec(ds, "INSERT INTO t VALUES (105)");
              return true;
            });
        try (Connection c = ds.getConnection()) {
          assertThat(longOf(c, "SELECT count(*) FROM t")).isEqualTo(105);
          assertThat(longOf(c, "SELECT inet_server_port()"))
              .isEqualTo(portOf(pair.primary().jdbcUrl()));
        }
      }
    }
  }

  private static long portOf(String url) {
    String hostPort = url.substring("jdbc:postgresql://".length(), url.indexOf('/', 18));
    return Long.parseLong(hostPort.substring(hostPort.indexOf(':') + 1));
  }

  private static void exec(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection()) {
      exec(c, sql);
    }
  }

  private static void exec(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static boolean bool(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private static long longOf(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
