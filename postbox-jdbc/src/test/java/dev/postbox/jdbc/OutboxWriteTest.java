package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@PostboxTest
class OutboxWriteTest {

  private DataSource ds;
  private final Outbox outbox = Outbox.postgres();

  @BeforeEach
  void migrate(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    assertThat(PostboxMigrations.migrate(ds)).isEqualTo(10);
    assertThat(PostboxMigrations.migrate(ds)).as("idempotent").isZero();
  }

  private static Message msg(String key) {
    return Message.builder("orders", "order.created")
        .key(key)
        .tenant("t1")
        .header("x-trace", "abc")
        .jsonPayload("{\"n\":1}")
        .build();
  }

  private long rows() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM postbox_outbox")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void writingWithAutoCommitFailsClearlyAndWritesNothing() throws Exception {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> outbox.write(c, msg("k")))
          .isInstanceOf(TransactionRequiredException.class)
          .hasMessageContaining("setAutoCommit(false)");
      assertThatThrownBy(() -> outbox.writeAll(c, List.of(msg("k"))))
          .isInstanceOf(TransactionRequiredException.class);
    }
    assertThat(rows()).isZero();
  }

  @Test
  void rolledBackTransactionLeavesNoRow() throws Exception {
    assertThatThrownBy(() ->
            outbox.inTransaction(
                ds,
                tx -> {
                  tx.write(msg("k1"));
                  throw new IllegalStateException("business rule failed");
                }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("business rule failed");
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      outbox.write(c, msg("k2"));
      c.rollback();
    }
    assertThat(rows()).isZero();
  }

  @Test
  void committedMessageRoundTripsThroughTheStore() throws Exception {
    Message m = msg("order-1");
    Message noKey = Message.builder("orders", "order.note").build();
    outbox.inTransaction(
        ds,
        tx -> {
          tx.write(m);
          tx.writeAll(List.of(noKey));
          return null;
        });
    RelayStore store = PostgresRelayStore.builder(ds).notifications(false).build();
    assertThat(store.heartbeat("r1", Duration.ofSeconds(30))).isEqualTo(1);
    List<LaneLease> leases = store.acquireLeases("r1", 64, Duration.ofSeconds(30));
    assertThat(leases).hasSize(64);
    List<OutboxRecord> claimed = store.claim("r1", leases, 10);
    assertThat(claimed).extracting(OutboxRecord::message).containsExactly(m, noKey);
    assertThat(store.markPublished("r1", leases, claimed, false)).isEqualTo(2);
    assertThat(store.claim("r1", leases, 10)).isEmpty();
    assertThat(store.purgePublished(leases, Duration.ZERO, 100)).isEqualTo(2);
    assertThat(rows()).isZero();

    Message gone = msg("order-2");
    Message poison = msg("order-3");
    outbox.inTransaction(
        ds,
        tx -> {
          tx.writeAll(List.of(gone, poison));
          return null;
        });
    List<OutboxRecord> next = store.claim("r1", leases, 10);
    assertThat(next).extracting(OutboxRecord::message).containsExactly(gone, poison);
    assertThat(store.markFailed("r1", leases, next.subList(1, 2), "too large")).isEqualTo(1);
    assertThat(store.markPublished("r1", leases, next.subList(0, 1), true))
        .as("deleted")
        .isEqualTo(1);
    assertThat(store.claim("r1", leases, 10)).as("failed rows are not claimed").isEmpty();
    assertThat(rows()).as("the failed row is kept").isEqualTo(1);
  }

  @Test
  void aSwallowedFailureInTheTransactionIsNotReportedAsACommit() throws Exception {
    assertThatThrownBy(() ->
            outbox.inTransaction(
                ds,
                tx -> {
                  tx.write(msg("k1"));
                  try (Statement s = tx.connection().createStatement()) {
                    s.execute("SELECT * FROM no_such_table");
                  } catch (SQLException ignored) {
                    // the caller swallows it; PostgreSQL has aborted the transaction
                  }
                  return "looks fine";
                }))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("aborted");
    assertThat(rows()).isZero();
  }

  @Test
  void sameMessageIdCannotBeWrittenTwice() {
    Message m = msg("k");
    outbox.inTransaction(
        ds,
        tx -> {
          tx.write(m);
          return null;
        });
    assertThatThrownBy(() ->
            outbox.inTransaction(
                ds,
                tx -> {
                  tx.write(m);
                  return null;
                }))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining(m.id().toString());
  }

  @Test
  void aRelayThatLostItsLeaseCannotMarkRows() {
    outbox.inTransaction(
        ds,
        tx -> {
          tx.write(msg("k"));
          return null;
        });
    RelayStore store = PostgresRelayStore.builder(ds).notifications(false).build();
    Duration ttl = Duration.ofMillis(1);
    store.heartbeat("a", ttl);
    List<LaneLease> a = store.acquireLeases("a", 64, ttl);
    List<OutboxRecord> claimedByA = store.claim("a", a, 10);
    // a's leases expired (1 ms); b takes every lane under a new epoch
    List<LaneLease> b = awaitAcquire(store, "b");
    assertThat(b).allSatisfy(l -> assertThat(l.epoch()).isEqualTo(2));
    assertThat(store.claim("a", a, 10)).as("a may not claim on a stale lease").isEmpty();
    assertThat(store.markPublished("a", a, claimedByA, false)).as("fenced").isZero();
    assertThat(store.markPublished("a", a, claimedByA, true)).as("delete fenced").isZero();
    assertThat(store.markFailed("a", a, claimedByA, "stale")).as("failed mark fenced").isZero();
    List<OutboxRecord> claimedByB = store.claim("b", b, 10);
    assertThat(claimedByB).hasSize(1);
    assertThat(store.markPublished("b", b, claimedByB, false)).isEqualTo(1);
  }

  private static List<LaneLease> awaitAcquire(RelayStore store, String id) {
    List<LaneLease> all = new java.util.ArrayList<>();
    for (int i = 0; i < 100_000; i++) {
      all.addAll(store.acquireLeases(id, 64 - all.size(), Duration.ofSeconds(30)));
      if (all.size() == 64) {
        return all;
      }
      Thread.onSpinWait();
    }
    throw new AssertionError("leases never expired");
  }
}
