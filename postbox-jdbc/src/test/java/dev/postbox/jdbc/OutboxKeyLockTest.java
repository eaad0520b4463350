package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BiConsumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The outbox's per-key lock: a transaction writing key K waits for an open transaction that wrote
 * K, so the positions of one key follow commit order. Every workload elsewhere takes its own
 * business row lock first, so only this test would notice the lock gone.
 */
@PostboxTest
class OutboxKeyLockTest {

  private DataSource ds;
  private final ExecutorService threads = Executors.newSingleThreadExecutor();

  @BeforeEach
  void migrate(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
  }

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  private static Message msg(String key, String what) {
    return Message.builder("orders", "order." + what).key(key).jsonPayload("{}").build();
  }

  @Test
  void aSecondWriterOfTheKeyWaitsForTheFirstAndGetsTheHigherPosition() throws Exception {
    assertWaitsThenFollows(Outbox.postgres(), (c, m) -> Outbox.postgres().write(c, m));
  }

  @Test
  void writeAllTakesTheSameLock() throws Exception {
    Outbox outbox = Outbox.postgres();
    assertWaitsThenFollows(
        outbox, (c, m) -> outbox.writeAll(c, List.of(m, msg("other-key", "noted"))));
  }

  @Test
  void otherKeysDoNotWait() throws Exception {
    Outbox outbox = Outbox.postgres();
    try (Connection first = ds.getConnection();
        Connection second = ds.getConnection()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      outbox.write(first, msg("K", "created"));
      outbox.write(second, msg("L", "created")); // returns at once: another key
      second.commit();
      first.commit();
    }
    assertThat(claimedTypes()).containsExactly("order.created", "order.created");
  }

  /**
   * Without the lock the inversion is real: the later transaction commits first with the higher
   * position, and the relay, which publishes a key by position, sends the later commit second.
   */
  @Test
  void withoutKeyLockingPositionsOfOneKeyCanContradictCommitOrder() throws Exception {
    Outbox unlocked = Outbox.builder().keyLocking(false).build();
    try (Connection first = ds.getConnection();
        Connection second = ds.getConnection()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      unlocked.write(first, msg("K", "created"));
      unlocked.write(second, msg("K", "cancelled")); // does not wait
      second.commit(); // "cancelled" commits first...
      first.commit();
    }
    assertThat(claimedTypes())
        .as("...but is published second: position order is not commit order")
        .containsExactly("order.created", "order.cancelled");
  }

  @Test
  void aDuplicateIdIsNamedInTheError() throws Exception {
    Outbox outbox = Outbox.postgres();
    Message m = msg("K", "created");
    outbox.inTransaction(
        ds,
        tx -> {
          tx.write(m);
          return null;
        });
    for (BiConsumer<Connection, Message> write :
        List.<BiConsumer<Connection, Message>>of(
            outbox::write, (c, x) -> outbox.writeAll(c, List.of(msg("L", "created"), x)))) {
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        assertThatThrownBy(() -> write.accept(c, m))
            .isInstanceOfSatisfying(
                DuplicateMessageIdException.class, e -> assertThat(e.messageId()).isEqualTo(m.id()))
            .hasMessageContaining("message id " + m.id() + " is already in the outbox");
        c.rollback();
      }
    }
    Message twice = msg("M", "created");
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> outbox.writeAll(c, List.of(twice, twice)))
          .isInstanceOfSatisfying(
              DuplicateMessageIdException.class,
              e -> assertThat(e.messageId()).isEqualTo(twice.id()));
      c.rollback();
    }
  }

  private void assertWaitsThenFollows(Outbox outbox, BiConsumer<Connection, Message> secondWrite)
      throws Exception {
    try (Connection first = ds.getConnection();
        Connection second = ds.getConnection()) {
      first.setAutoCommit(false);
      second.setAutoCommit(false);
      outbox.write(first, msg("K", "created"));
      int secondPid = backendPid(second);
      CompletableFuture<Void> written =
          CompletableFuture.runAsync(
              () -> secondWrite.accept(second, msg("K", "cancelled")), threads);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> "advisory".equals(waitEvent(secondPid)) || written.isDone());
      assertThat(written).as("the second writer of K waits on the key lock").isNotDone();
      first.commit();
      written.get();
      second.commit();
    }
    assertThat(claimedTypes())
        .as("the waiting writer's row is positioned after the first's commit")
        .startsWith("order.created", "order.cancelled");
  }

  private static int backendPid(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      int pid = rs.getInt(1);
      c.commit();
      return pid;
    }
  }

  private String waitEvent(int pid) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT wait_event FROM pg_stat_activity WHERE pid = ?")) {
      ps.setInt(1, pid);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  /** The types of the pending rows of key K, as the relay claims them (position order). */
  private List<String> claimedTypes() {
    RelayStore store = PostgresRelayStore.builder(ds).notifications(false).build();
    store.heartbeat("r", Duration.ofSeconds(30));
    List<LaneLease> leases = store.acquireLeases("r", 64, Duration.ofSeconds(30));
    return store.claim("r", leases, 100).stream()
        .map(OutboxRecord::message)
        .filter(m -> m.key().orElse("").equals("K") || m.key().orElse("").equals("L"))
        .map(Message::type)
        .toList();
  }
}
