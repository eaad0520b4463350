package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The emit-message outbox: messages that exist only in the WAL, decoded from committed
 * transactions, in commit order and, within a transaction, in the order written among outbox rows;
 * a rolled-back transaction's messages never go out.
 */
@PostboxTest
class CdcEmitMessageTest {

  private static final Duration ARRIVAL = Duration.ofSeconds(60);

  private final List<CdcRelay> relays = new ArrayList<>();
  private PostboxTestContext ctx;
  private DataSource ds;

  @BeforeEach
  void migrate(PostboxTestContext ctx) {
    this.ctx = ctx;
    this.ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
  }

  @AfterEach
  void dropSlot() throws SQLException {
    relays.forEach(CdcRelay::close);
    if (!relays.isEmpty()) {
      CdcSlots.drop(ds, relays.get(0).slotName(), relays.get(0).publicationName());
    }
  }

  private static Message message(int n) {
    return Message.builder("orders", "order.created")
        .key("k" + (n % 3))
        .header("n", Integer.toString(n))
        .correlationId("c" + n)
        .jsonPayload("{\"n\":" + n + "}")
        .build();
  }

  private CdcRelay startRelay(RecordingPublisher publisher) {
    CdcRelay relay =
        CdcRelay.builder(ds, ctx.jdbcUrl(), publisher)
            .instanceId("emit")
            .batchSize(20)
            .logicalMessages(true)
            .backoff(new Backoff(Duration.ofMillis(20), Duration.ofMillis(200), 2, 0.5))
            .build();
    relays.add(relay);
    relay.start();
    await().atMost(ARRIVAL).until(relay::active);
    return relay;
  }

  @Test
  void emittedMessagesOfCommittedTransactionsArePublishedInOrderAmongOutboxRows() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    CdcRelay relay = startRelay(publisher);

    Outbox emit = EmitMessageOutbox.create(); // used through the Outbox interface
    Outbox rows = Outbox.postgres();
    List<Message> expected = new ArrayList<>();
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      for (int t = 0; t < 10; t++) {
        Message a = message(t * 4);
        Message b = message(t * 4 + 1);
        Message d = message(t * 4 + 2);
        Message e = message(t * 4 + 3);
        emit.write(c, a);
        rows.write(c, b); // a table row between two emitted messages
        emit.writeAll(c, List.of(d, e));
        c.commit();
        expected.addAll(List.of(a, b, d, e));
      }
      emit.write(c, message(999));
      c.rollback();
    }
    try (Connection c = ds.getConnection()) {
      assertThatThrownBy(() -> emit.write(c, message(1000)))
          .isInstanceOf(TransactionRequiredException.class);
    }
    await().atMost(ARRIVAL).until(() -> publisher.acknowledged().size() >= 40);
    assertThat(publisher.acknowledged())
        .extracting(Message::id)
        .containsExactlyElementsOf(expected.stream().map(Message::id).toList());
    Message first = publisher.acknowledged().get(0);
    assertThat(first.headers()).containsEntry("n", "0");
    assertThat(first.correlationId()).contains("c0");
    assertThat(first.payload()).isEqualTo(expected.get(0).payload());
    assertThat(first.key()).isEqualTo(expected.get(0).key());
    await().atMost(ARRIVAL).until(() -> relay.stats().marked() == 10); // the 10 table rows
  }

  private long orders(String customer) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT count(*) FROM emit_order WHERE customer = '" + customer + "'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void order(Connection c, String customer) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO emit_order VALUES (?)")) {
      ps.setString(1, customer);
      ps.executeUpdate();
    }
  }

  @Test
  void inTransactionEmitsWithTheCommitAndNothingOfAFailedTransaction() throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      // deferred: a duplicate is refused only by the COMMIT, which shares the emission's round trip
      s.execute(
          "CREATE TABLE emit_order (customer text,"
              + " UNIQUE (customer) DEFERRABLE INITIALLY DEFERRED)");
    }
    RecordingPublisher publisher = new RecordingPublisher();
    startRelay(publisher);
    EmitMessageOutbox emit = EmitMessageOutbox.create();
    List<Message> expected = new ArrayList<>();

    Message one = message(1);
    String result =
        emit.inTransaction(
            ds,
            tx -> {
              order(tx.connection(), "a");
              tx.write(one);
              return "done";
            });
    assertThat(result).isEqualTo("done");
    expected.add(one);

    List<Message> three = List.of(message(2), message(3), message(4));
    emit.inTransaction(
        ds,
        tx -> {
          tx.write(three.get(0));
          order(tx.connection(), "b");
          tx.writeAll(three.subList(1, 3));
          return null;
        });
    expected.addAll(three);

    // the commit refuses the duplicate: the order and the messages are rolled back together
    assertThatThrownBy(() ->
            emit.inTransaction(
                ds,
                tx -> {
                  order(tx.connection(), "c");
                  order(tx.connection(), "c");
                  tx.write(message(5));
                  return null;
                }))
        .isInstanceOf(OutboxException.class)
        .hasMessageContaining("committing")
        .rootCause()
        .hasMessageContaining("duplicate key");
    assertThat(orders("c")).isZero();

    // the work throws: rolled back, rethrown
    IllegalStateException boom = new IllegalStateException("boom");
    assertThatThrownBy(() ->
            emit.inTransaction(
                ds,
                tx -> {
                  order(tx.connection(), "d");
                  tx.write(message(6));
                  throw boom;
                }))
        .isSameAs(boom);
    assertThat(orders("d")).isZero();

    // the work may not end the transaction itself (its order would commit without the messages)
    assertThatThrownBy(() ->
            emit.inTransaction(
                ds,
                tx -> {
                  order(tx.connection(), "f");
                  tx.write(message(7));
                  tx.connection().commit();
                  return null;
                }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("called commit()");
    assertThat(orders("f")).isZero();

    // nothing to emit: a plain commit
    emit.inTransaction(
        ds,
        tx -> {
          order(tx.connection(), "e");
          return null;
        });
    assertThat(orders("e")).isOne();

    Message last = message(8);
    emit.inTransaction(
        ds,
        tx -> {
          tx.write(last);
          return null;
        });
    expected.add(last);
    await().atMost(ARRIVAL).until(() -> publisher.acknowledged().size() >= expected.size());
    // the last one arrived, so every failed transaction's messages would have arrived before it
    assertThat(publisher.acknowledged())
        .extracting(Message::id)
        .containsExactlyElementsOf(expected.stream().map(Message::id).toList());
    assertThat(orders("a") + orders("b")).isEqualTo(2);
  }

  /**
   * What {@link EmitMessageOutbox#inTransaction} relies on: pgjdbc sends a two-part statement
   * before one sync, so when the first part fails the server skips the {@code COMMIT} and the
   * transaction stays aborted, to be rolled back.
   */
  @Test
  void aFailingFirstPartSkipsTheCommitOfTheSameStatement() throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE emit_order (customer text)");
    }
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      order(c, "x");
      try (PreparedStatement ps = c.prepareStatement("SELECT 1 / (? - 1); COMMIT")) {
        ps.setInt(1, 1);
        assertThatThrownBy(ps::execute).hasMessageContaining("division by zero");
      }
      c.rollback();
      order(c, "y");
      try (PreparedStatement ps = c.prepareStatement("SELECT 1 / (? - 1); COMMIT")) {
        ps.setInt(1, 2);
        ps.execute();
      }
      c.rollback(); // nothing left to roll back: the statement committed
    }
    assertThat(orders("x")).isZero();
    assertThat(orders("y")).isOne();
  }
}
