package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A writer halted (as by {@code kill -9}) inside {@link EmitMessageOutbox#inTransaction}: before
 * the committing round trip neither its order nor its message exists; after it, both do, and the
 * CDC relay publishes the message.
 */
@PostboxTest
class EmitWriterCrashIT {

  private static final Duration WAIT = Duration.ofSeconds(120);
  private CdcRelay relay;
  private DataSource ds;

  @AfterEach
  void dropSlot() throws SQLException {
    if (relay != null) {
      relay.close();
      CdcSlots.drop(ds, relay.slotName(), relay.publicationName());
    }
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

  private void writeInChild(PostboxTestContext ctx, String customer, UUID id, String crashPoint) {
    try (ChildJvm child =
        ChildJvm.builder(EmitWriterChildMain.class)
            .args(ctx.jdbcUrl(), customer, id.toString())
            .systemProperty(CrashPoints.PROPERTY, crashPoint + "@1")
            .start()) {
      assertThat(child.waitFor(WAIT)).contains(CrashPoints.EXIT_CODE);
      assertThat(child.logTail(20))
          .contains(CrashPoints.MARKER + " " + crashPoint)
          .doesNotContain("committed");
    }
  }

  @Test
  void aWriterHaltedBeforeTheCommitLeavesNothingAndAfterItLeavesBoth(PostboxTestContext ctx)
      throws Exception {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE emit_order (customer text)");
    }
    RecordingPublisher publisher = new RecordingPublisher();
    relay =
        CdcRelay.builder(ds, ctx.jdbcUrl(), publisher)
            .instanceId("crash")
            .logicalMessages(true)
            .backoff(new Backoff(Duration.ofMillis(20), Duration.ofMillis(200), 2, 0.5))
            .build();
    relay.start();
    await().atMost(WAIT).until(relay::active);

    UUID before = UUID.randomUUID();
    writeInChild(ctx, "before", before, CrashPoints.OUTBOX_BEFORE_COMMIT);
    assertThat(orders("before")).isZero();

    UUID after = UUID.randomUUID();
    writeInChild(ctx, "after", after, CrashPoints.OUTBOX_AFTER_COMMIT);
    assertThat(orders("after")).isOne();

    Message last = Message.builder("orders", "order.created").key("last").jsonPayload("{}").build();
    EmitMessageOutbox.create()
        .inTransaction(
            ds,
            tx -> {
              tx.write(last);
              return null;
            });
    await().atMost(WAIT).until(() -> publisher.acknowledged().size() >= 2);
    // WAL order: had the halted-before transaction's message committed, it would come first
    assertThat(publisher.acknowledged())
        .extracting(Message::id)
        .containsExactlyElementsOf(List.of(after, last.id()));
  }
}
