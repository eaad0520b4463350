package dev.postbox.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Savepoint;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.postgresql.core.BaseConnection;

/**
 * {@link Transactions#guarded}: the view of a connection that the work inside a Postbox-run
 * transaction gets. It cannot end the transaction, and is otherwise the connection.
 */
@PostboxTest
class GuardedConnectionTest {

  @Test
  void refusesToEndTheTransactionAndPassesEverythingElseOn(PostboxTestContext ctx)
      throws Exception {
    try (Connection real = ctx.dataSource().getConnection()) {
      real.setAutoCommit(false);
      Connection guarded = Transactions.guarded(real, "the test");
      for (ThrowingCall call :
          new ThrowingCall[] {
            guarded::commit, guarded::rollback, () -> guarded.setAutoCommit(true), guarded::close
          }) {
        assertThatThrownBy(call::run)
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("belong to the test");
      }
      assertThat(real.isClosed()).isFalse();
      assertThat(real.getAutoCommit()).isFalse();

      try (Statement s = guarded.createStatement()) {
        s.execute("CREATE TEMP TABLE g (n int)");
        s.execute("INSERT INTO g VALUES (1)");
        Savepoint before = guarded.setSavepoint();
        s.execute("INSERT INTO g VALUES (2)");
        guarded.rollback(before); // to a savepoint: the transaction goes on
        try (ResultSet rs = s.executeQuery("SELECT count(*) FROM g")) {
          rs.next();
          assertThat(rs.getInt(1)).isOne();
        }
      }
      assertThat(guarded.unwrap(BaseConnection.class)).isNotNull();
      assertThat(guarded.equals(guarded)).isTrue(); // not real.equals(proxy)
      assertThat(guarded.equals(real)).isFalse();
      assertThat(guarded.hashCode()).isEqualTo(guarded.hashCode());
      assertThatThrownBy(() -> guarded.createStatement().execute("SELECT * FROM missing"))
          .isInstanceOf(java.sql.SQLException.class); // the driver's exception, not a wrapper
      real.rollback();
    }
  }

  @FunctionalInterface
  private interface ThrowingCall {
    void run() throws Exception;
  }
}
