package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.SQLException;
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

  @Test
  void emittedMessagesOfCommittedTransactionsArePublishedInOrderAmongOutboxRows() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
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

    EmitMessageOutbox emit = EmitMessageOutbox.create();
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
}
