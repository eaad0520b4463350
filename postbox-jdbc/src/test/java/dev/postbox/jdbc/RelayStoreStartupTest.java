package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * The relay store's start-up check tells a database it cannot reach from one whose migrations have
 * not run (found by the fault-injection harness: a relay starting while PostgreSQL restarted was
 * told to run the migrations).
 */
@PostboxTest
class RelayStoreStartupTest {

  @Test
  void unreachableDatabaseIsNotReportedAsMissingMigrations() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    try (HikariDataSource ds = new HikariDataSource()) {
      ds.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + port + "/postgres");
      ds.setConnectionTimeout(1_000);
      ds.setInitializationFailTimeout(-1);
      assertThatThrownBy(() -> PostgresRelayStore.create(ds))
          .isInstanceOf(OutboxException.class)
          .hasMessageStartingWith("cannot read postbox_relay_lane")
          .hasMessageNotContaining("migrate");
    }
  }

  @Test
  void missingTablesAreReportedAsMissingMigrations(PostboxTestContext ctx) {
    assertThatThrownBy(() -> PostgresRelayStore.create(ctx.dataSource()))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("run PostboxMigrations.migrate first");
  }
}
