package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * A store's start-up check given a connection whose session the server had ended ({@code
 * pg_terminate_backend} while it sat in the pool) asks again on another connection instead of
 * failing the relay's or consumer's start (found by the fault campaign: relays and consumers that
 * started during a {@code pg-terminate-backend} fault exited). The dead connections are real
 * PostgreSQL sessions, terminated by the server before they are handed out.
 */
@PostboxTest
class StoreStartupSessionEndedTest {

  @Test
  void relayAndInboxStoresStartOnAConnectionWhoseSessionWasEnded(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    AtomicInteger handedOut = new AtomicInteger();
    DataSource firstDead = deadThen(ctx.dataSource(), 1, handedOut);
    PostgresRelayStore.create(firstDead); // would throw "terminating connection" on the first
    assertThat(handedOut).hasValue(2);

    handedOut.set(0);
    // after a crash every idle connection of a pool is dead: several in a row
    PostgresInboxStore.create(deadThen(ctx.dataSource(), 5, handedOut));
    assertThat(handedOut).hasValue(6);
  }

  @Test
  void aSessionEndedOnEveryAttemptStillFailsWithTheServersWords(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    AtomicInteger handedOut = new AtomicInteger();
    assertThatThrownBy(() -> PostgresRelayStore.create(deadThen(ctx.dataSource(), 100, handedOut)))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("terminating connection")
        .hasMessageNotContaining("migrate");
    assertThat(handedOut).hasValue(8); // StartupQuery.ATTEMPTS
  }

  /**
   * A data source whose first {@code dead} connections are sessions the server already ended, then
   * {@code real}'s own; counts the connections it hands out.
   */
  private static DataSource deadThen(DataSource real, int dead, AtomicInteger handedOut) {
    return (DataSource)
        Proxy.newProxyInstance(
            DataSource.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              if (method.getName().equals("getConnection") && method.getParameterCount() == 0) {
                return handedOut.incrementAndGet() <= dead
                    ? terminated(real)
                    : real.getConnection();
              }
              try {
                return method.invoke(real, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  /** A connection of {@code real} whose backend another session has terminated. */
  private static Connection terminated(DataSource real) throws SQLException {
    Connection victim = real.getConnection();
    int pid;
    try (Statement s = victim.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      pid = rs.getInt(1);
    }
    try (Connection other = real.getConnection();
        Statement s = other.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT pg_terminate_backend(" + pid + ", 10000)")) { // waits until it is gone
      rs.next();
      assertThat(rs.getBoolean(1)).as("backend %s terminated", pid).isTrue();
    }
    return victim;
  }
}
