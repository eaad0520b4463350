package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Payload;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.InboxStore.Outcome;
import dev.postbox.core.spi.InboxStore.Processed;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Stored results (migration V10): the result the work returns is stored on the inbox row in the
 * effect's transaction, and a repeated id gets it back without running the work (the seed's
 * business-level idempotency: a repeated debit returns the first result).
 */
@PostboxTest
class InboxStoredResultTest {

  private static final String CONSUMER = "payments";
  private static final byte[] SHA = new byte[32];

  private DataSource ds;
  private InboxStore store;

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws SQLException {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresInboxStore.create(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE balance (account text PRIMARY KEY, amount int NOT NULL)");
      s.execute("INSERT INTO balance VALUES ('acc-1', 100)");
    }
  }

  /** Debits 10 (not idempotent) and returns the new balance as the result. */
  private InboxStore.ResultWork debit(AtomicInteger runs) {
    return c -> {
      runs.incrementAndGet();
      try (PreparedStatement ps =
          c.prepareStatement(
              "UPDATE balance SET amount = amount - 10 WHERE account = 'acc-1' RETURNING amount")) {
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return Optional.of(Payload.json("{\"balance\":" + rs.getInt(1) + "}"));
        }
      }
    };
  }

  @Test
  void aRepeatedIdReturnsTheStoredResultWithoutDebitingAgain() throws Exception {
    UUID id = UUID.randomUUID();
    AtomicInteger runs = new AtomicInteger();

    Processed first = store.processOnceWithResult(CONSUMER, id, SHA, debit(runs));
    Processed again = store.processOnceWithResult(CONSUMER, id, SHA, debit(runs));

    assertThat(first.outcome()).isEqualTo(Outcome.APPLIED);
    assertThat(first.result()).map(Payload::asString).contains("{\"balance\":90}");
    assertThat(again.outcome()).isEqualTo(Outcome.DUPLICATE);
    assertThat(again.result().get().asString()).isEqualTo("{\"balance\":90}");
    assertThat(again.result().get().contentType()).isEqualTo(Payload.JSON);
    assertThat(runs).as("debited once").hasValue(1);
    assertThat(balance()).isEqualTo(90);
  }

  @Test
  void aFailedEffectStoresNoResultSoTheRetryRunsIt() throws Exception {
    UUID id = UUID.randomUUID();
    AtomicInteger runs = new AtomicInteger();
    InboxStore.ResultWork failing =
        c -> {
          debit(runs).run(c);
          throw new IllegalStateException("payment gateway down");
        };
    assertThatThrownBy(() -> store.processOnceWithResult(CONSUMER, id, SHA, failing))
        .hasMessage("payment gateway down");
    assertThat(balance()).as("rolled back").isEqualTo(100);

    Processed retry = store.processOnceWithResult(CONSUMER, id, SHA, debit(runs));
    assertThat(retry.outcome()).isEqualTo(Outcome.APPLIED);
    assertThat(retry.result().get().asString()).isEqualTo("{\"balance\":90}");
    assertThat(balance()).isEqualTo(90);
  }

  @Test
  void withoutAResultTheRowHasNoneAndADuplicateGetsNone() throws Exception {
    UUID id = UUID.randomUUID();
    assertThat(store.processOnceWithResult(CONSUMER, id, SHA, c -> Optional.empty()).result())
        .isEmpty();
    Processed again = store.processOnceWithResult(CONSUMER, id, SHA, c -> Optional.empty());
    assertThat(again.outcome()).isEqualTo(Outcome.DUPLICATE);
    assertThat(again.result()).isEmpty();
    // rows of the plain processOnce (and from before V10) read the same way
    UUID plain = UUID.randomUUID();
    assertThat(store.processOnce(CONSUMER, plain, c -> {})).isTrue();
    assertThat(store.processOnceWithResult(CONSUMER, plain, SHA, c -> Optional.empty()))
        .isEqualTo(new Processed(Outcome.DUPLICATE, Optional.empty()));
  }

  @Test
  void aDifferentPayloadUnderTheSameIdIsAConflictWithoutTheResult() throws Exception {
    UUID id = UUID.randomUUID();
    AtomicInteger runs = new AtomicInteger();
    store.processOnceWithResult(CONSUMER, id, SHA, debit(runs));
    byte[] other = new byte[32];
    other[0] = 1;
    assertThat(store.processOnceWithResult(CONSUMER, id, other, debit(runs)))
        .isEqualTo(new Processed(Outcome.CONFLICT, Optional.empty()));
    assertThat(runs).hasValue(1);
  }

  @Test
  void theResultIsKeptPerConsumer() throws Exception {
    UUID id = UUID.randomUUID();
    store.processOnceWithResult(CONSUMER, id, SHA, c -> Optional.of(Payload.json("\"a\"")));
    store.processOnceWithResult("audit", id, SHA, c -> Optional.of(Payload.json("\"b\"")));
    assertThat(store.processOnceWithResult("audit", id, SHA, c -> Optional.empty()).result())
        .map(Payload::asString)
        .contains("\"b\"");
  }

  private int balance() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT amount FROM balance WHERE account = 'acc-1'")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
