package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.RelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A relay process stopped in the middle of one of its short transactions (an idle mark, a
 * heartbeat) keeps its instance row locked until it resumes. The other relays' heartbeats must
 * neither wait for that lock nor count the stopped instance as live, or they never take over its
 * lanes (found by RelayIT's paused relay once relays began marking themselves idle).
 */
@PostboxTest
class RelayStoreLivenessTest {

  @Test
  void aStoppedInstanceHoldingItsRowNeitherBlocksNorCountsInAHeartbeat(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    RelayStore store = PostgresRelayStore.create(ctx.dataSource());
    Duration ttl = Duration.ofSeconds(2);
    try (Connection stopped = ctx.dataSource().getConnection()) {
      try (Statement st = stopped.createStatement()) {
        st.execute(
            "INSERT INTO postbox_relay_instance (instance_id, seen_at)"
                + " VALUES ('stopped', now() - interval '1 minute')");
      }
      stopped.setAutoCommit(false);
      try (Statement st = stopped.createStatement()) {
        // the idle mark of a process that was stopped before its commit
        st.executeUpdate(
            "UPDATE postbox_relay_instance SET idle = false WHERE instance_id = 'stopped'");
      }
      int live =
          CompletableFuture.supplyAsync(() -> store.heartbeat("alive", ttl))
              .get(30, TimeUnit.SECONDS);
      assertThat(live).as("the stopped instance is not live").isEqualTo(1);
      stopped.rollback(); // the process resumed, or PostgreSQL ended its session
    }
    assertThat(store.heartbeat("alive", ttl)).isEqualTo(1);
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT count(*) FROM postbox_relay_instance WHERE instance_id = 'stopped'")) {
      rs.next();
      assertThat(rs.getInt(1)).as("forgotten once its row is free").isZero();
    }
  }

  /**
   * A relay stopped longer than the TTL is forgotten by the others (its row deleted) and registers
   * again when it resumes. If it was draining, its row must come back busy: the column default
   * (idle) would make every outbox insert notify, serialising the writers' commits, until the relay
   * next went idle and busy again.
   */
  @Test
  void aForgottenInstanceRegistersAgainWithTheIdleMarkItLastWrote(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    RelayStore store = PostgresRelayStore.create(ctx.dataSource());
    Duration ttl = Duration.ofSeconds(2);
    store.heartbeat("draining", ttl);
    store.markIdle("draining", false);
    assertThat(idle(ctx, "draining")).isFalse();

    execute(ctx, "DELETE FROM postbox_relay_instance WHERE instance_id = 'draining'");
    store.heartbeat("draining", ttl);
    assertThat(idle(ctx, "draining")).as("registered again, still draining").isFalse();

    // a mark made while the row is gone is kept too
    execute(ctx, "DELETE FROM postbox_relay_instance WHERE instance_id = 'draining'");
    store.markIdle("draining", true);
    assertThat(idle(ctx, "draining")).as("marked idle while forgotten").isTrue();
    store.markIdle("draining", false);
    assertThat(idle(ctx, "draining")).isFalse();
  }

  private static void execute(PostboxTestContext ctx, String sql) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  /** The instance's idle mark, or null when it has no row. */
  private static Boolean idle(PostboxTestContext ctx, String instanceId) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT idle FROM postbox_relay_instance WHERE instance_id = '"
                    + instanceId
                    + "'")) {
      return rs.next() ? rs.getBoolean(1) : null;
    }
  }
}
