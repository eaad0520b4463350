package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The inbox's transactions run by an application's {@link TransactionRunner} (as a framework's
 * transaction manager does), on the test kit's PostgreSQL: the runner supplies the connection and
 * commits as the inbox decided; a duplicate is rolled back; an aborted transaction is refused.
 */
@PostboxTest
class InboxTransactionRunnerTest {

  private DataSource ds;
  private final List<String> log = new ArrayList<>();
  private InboxStore store;

  /** Begins on a connection of the data source and commits or rolls back as the body says. */
  private final class Runner implements TransactionRunner {
    @Override
    public <T> T inTransaction(String what, Body<T> body) throws Exception {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        try {
          Step<T> step = body.run(c);
          if (step.commit()) {
            c.commit();
            log.add("commit");
          } else {
            c.rollback();
            log.add("rollback");
          }
          return step.value();
        } catch (Exception e) {
          c.rollback();
          log.add("rollback after " + e.getClass().getSimpleName());
          throw e;
        } finally {
          c.setAutoCommit(true);
        }
      }
    }
  }

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws SQLException {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresInboxStore.create(ds, new Runner());
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS effect (message_id uuid NOT NULL)");
    }
  }

  private static void effect(Connection c, UUID id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect VALUES (?)")) {
      ps.setObject(1, id);
      ps.executeUpdate();
    }
  }

  private long effects(UUID id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM effect WHERE message_id = ?")) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @Test
  void theRunnerCommitsTheEffectWithTheRecordAndRollsBackTheDuplicate() throws Exception {
    UUID id = UUID.randomUUID();
    assertThat(store.processOnce("billing", id, c -> effect(c, id))).isTrue();
    assertThat(store.processOnce("billing", id, c -> effect(c, id))).isFalse();
    assertThat(effects(id)).isEqualTo(1);
    assertThat(log).containsExactly("commit", "rollback");
  }

  @Test
  void aFailedEffectRollsBackItsRecordSoARetryApplies() throws Exception {
    UUID id = UUID.randomUUID();
    assertThatThrownBy(() ->
            store.processOnce(
                "billing",
                id,
                c -> {
                  effect(c, id);
                  throw new IllegalStateException("after the effect");
                }))
        .hasMessage("after the effect");
    assertThat(store.processOnce("billing", id, c -> effect(c, id))).isTrue();
    assertThat(effects(id)).isEqualTo(1);
  }

  @Test
  void aBatchRunsInTheRunnersTransactions() throws Exception {
    UUID a = UUID.randomUUID();
    UUID b = UUID.randomUUID();
    assertThat(store.processBatch("billing", List.of(a), (c, fresh) -> effect(c, a)))
        .containsExactly(a);
    // a is a redelivery: the first (all-new) attempt rolls back, the second applies b only
    Set<UUID> fresh =
        store.processBatch(
            "billing",
            List.of(a, b),
            (c, ids) -> {
              for (UUID id : ids) {
                effect(c, id);
              }
            });
    assertThat(fresh).containsExactly(b);
    assertThat(effects(a)).isEqualTo(1);
    assertThat(effects(b)).isEqualTo(1);
  }

  @Test
  void aTransactionTheWorkLeftAbortedIsRefusedNotCommitted() throws Exception {
    UUID id = UUID.randomUUID();
    assertThatThrownBy(() ->
            store.processOnce(
                "billing",
                id,
                c -> {
                  effect(c, id);
                  try (Statement s = c.createStatement()) {
                    s.execute("SELECT * FROM no_such_table");
                  } catch (SQLException swallowed) {
                    // the work caught it: PostgreSQL has aborted the transaction
                  }
                }))
        .isInstanceOf(InboxException.class)
        .hasMessageContaining("left its transaction aborted");
    assertThat(effects(id)).isZero();
    assertThat(store.processOnce("billing", id, c -> effect(c, id))).isTrue();
  }
}
