package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A stalled phase's diagnostics name the session that waits, what it waits for and the session that
 * blocks it: a campaign process's session holding a row lock in an open transaction, another one's
 * update of that row waiting behind it.
 */
@PostboxTest
class StallDiagnosticsIT {

  @Test
  void namesTheWaitingSessionAndItsBlocker(PostboxTestContext ctx) throws Exception {
    String tag = "stall" + Long.toHexString(System.nanoTime());
    try (HikariDataSource harness = ctx.newDataSource(2);
        HikariDataSource holderPool =
            ChildSupport.dataSource(ctx.jdbcUrl(), tag + "-holder", 1, "");
        HikariDataSource waiterPool =
            ChildSupport.dataSource(ctx.jdbcUrl(), tag + "-waiter", 1, "")) {
      try (Connection c = harness.getConnection();
          Statement st = c.createStatement()) {
        st.execute("CREATE TABLE " + tag + " (k int PRIMARY KEY, v int)");
        st.execute("INSERT INTO " + tag + " VALUES (1, 0)");
      }
      assertThat(mine(StallDiagnostics.sessions(harness), tag)).isEmpty();
      try (Connection holder = holderPool.getConnection()) {
        holder.setAutoCommit(false);
        int holderPid;
        try (Statement st = holder.createStatement();
            ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
          rs.next();
          holderPid = rs.getInt(1);
          st.executeUpdate("UPDATE " + tag + " SET v = 1 WHERE k = 1");
        }
        CompletableFuture<Integer> waiter =
            CompletableFuture.supplyAsync(() -> {
              try (Connection w = waiterPool.getConnection();
                  Statement st = w.createStatement()) {
                return st.executeUpdate("UPDATE " + tag + " SET v = 2 WHERE k = 1");
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
        List<String> lines = List.of();
        for (int i = 0; i < 300 && !lines.stream().anyMatch(l -> l.contains("-waiter")); i++) {
          Thread.sleep(100);
          lines = mine(StallDiagnostics.sessions(harness), tag);
        }
        assertThat(lines)
            .anySatisfy(l ->
                assertThat(l)
                    .contains(tag + "-holder idle in transaction")
                    .contains("blocked by {}"))
            .anySatisfy(l ->
                assertThat(l)
                    .contains(tag + "-waiter active waits Lock:transactionid")
                    .contains("blocked by {" + holderPid + "}")
                    .contains("UPDATE " + tag + " SET v = 2"));
        holder.commit();
        assertThat(waiter.get()).isEqualTo(1);
      }
      assertThat(mine(StallDiagnostics.sessions(harness), tag)).isEmpty();
    }
  }

  private static List<String> mine(List<String> lines, String tag) {
    return lines.stream().filter(l -> l.contains(tag)).toList();
  }
}
