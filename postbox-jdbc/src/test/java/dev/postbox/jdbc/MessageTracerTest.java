package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

@PostboxTest
class MessageTracerTest {

  private static Message write(PostboxTestContext ctx, String key) {
    Message m = Message.builder("orders", "order.created").key(key).jsonPayload("{}").build();
    Outbox.postgres()
        .inTransaction(
            ctx.dataSource(),
            tx -> {
              tx.write(m);
              return null;
            });
    return m;
  }

  @Test
  void aPendingRowThenOneTheRelayGaveUpOn(PostboxTestContext ctx) throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    Message m = write(ctx, "o-1");
    MessageTracer tracer = MessageTracer.postgres(ctx.dataSource());
    assertThat(tracer.trace(m.id()).steps())
        .extracting(MessageTrace.Step::step)
        .containsExactly("occurred", "written", "pending");

    try (Connection c = ctx.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE postbox_outbox SET failed_at = now(), attempts = 1,"
                    + " last_error = 'record too large' WHERE message_id = ?")) {
      ps.setObject(1, m.id());
      ps.executeUpdate();
    }
    MessageTrace t = tracer.trace(m.id());
    assertThat(t.steps())
        .extracting(MessageTrace.Step::step)
        .containsExactly("occurred", "written", "publish-failed");
    assertThat(t.steps().get(2).detail()).contains("record too large");
    assertThat(t.steps().get(1).attributes())
        .containsEntry("key", "o-1")
        .containsEntry("topic", "orders");
  }

  @Test
  void aRequestsInboxRecordShowsItsStoredReply(PostboxTestContext ctx) throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    UUID request = UUID.randomUUID();
    try (Connection c = ctx.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO postbox_inbox (consumer, message_id, result, result_content_type)"
                    + " VALUES ('payments', ?, ?, 'application/json')")) {
      ps.setObject(1, request);
      ps.setBytes(2, "{\"authorised\":true,\"charge\":7}".getBytes(StandardCharsets.UTF_8));
      ps.executeUpdate();
    }
    MessageTrace t = MessageTracer.postgres(ctx.dataSource()).trace(request);
    MessageTrace.Step processed =
        t.steps().stream().filter(s -> s.step().equals("processed")).findFirst().orElseThrow();
    assertThat(processed.by()).isEqualTo("payments");
    assertThat(processed.detail()).contains("stored result").contains("\"charge\":7");
    assertThat(processed.attributes())
        .containsEntry("stored_result", "{\"authorised\":true,\"charge\":7}")
        .containsEntry("stored_result_content_type", "application/json")
        .containsEntry(
            "reply_id", dev.postbox.core.engine.reply.ResponderHandler.replyId(request).toString());
  }

  @Test
  void anUnknownIdHasNoSteps(PostboxTestContext ctx) {
    PostboxMigrations.migrate(ctx.dataSource());
    MessageTrace t = MessageTracer.postgres(ctx.dataSource()).trace(UUID.randomUUID());
    assertThat(t.found()).isFalse();
    assertThat(t.notes()).anyMatch(n -> n.contains("no outbox row"));
  }

  @Test
  void findsParkedCopiesAndDeadLettersAndReadsAnotherSchemaByName(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    UUID id = UUID.randomUUID();
    byte[] idBytes = id.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    ParkingStore parking = PostgresParkingStore.create(ctx.dataSource());
    parking.park(
        "billing",
        "k-9",
        new ParkingStore.ParkedRecord(
            "orders",
            1,
            77,
            null,
            new byte[0],
            List.of(new Header("ce_type", new byte[] {'x'}), new Header("ce_id", idBytes))),
        2,
        Instant.now().plusSeconds(60),
        "warehouse down");
    DeadLetterStore dead = PostgresDeadLetterStore.create(ctx.dataSource());
    DeadLetterStore.NewDeadLetter l =
        DeadLetterTestData.letter("billing", "orders", "k-9", "fp", Instant.now().minusSeconds(5));
    dead.add(DeadLetterTestData.withMessageId(l, id));

    // A connection whose current schema is another one: the tracer names the schema.
    PGSimpleDataSource other = new PGSimpleDataSource();
    other.setUrl(ctx.postgres().jdbcUrl());
    MessageTrace t = MessageTracer.postgres(other, ctx.schema()).trace(id);
    assertThat(t.steps())
        .extracting(MessageTrace.Step::step)
        .containsExactly("failed", "parked", "dead-lettered"); // parked first, then dead-lettered
    MessageTrace.Step parked = t.steps().get(1);
    assertThat(parked.by()).isEqualTo("billing");
    assertThat(parked.attributes())
        .containsEntry("attempts", "2")
        .containsEntry("last_error", "warehouse down");
    assertThat(t.steps().get(2).attributes()).containsEntry("status", "PENDING");

    OperationsProbe.Snapshot s =
        OperationsProbe.builder(ctx.dataSource())
            .stuckThreshold(Duration.ofHours(1))
            .build()
            .snapshot();
    assertThat(s.deadLettersPending()).isEqualTo(1);
    assertThat(s.deadLettersOldestAge()).isGreaterThanOrEqualTo(Duration.ofSeconds(4));
    assertThat(s.parkedMessages()).isEqualTo(1);
    assertThat(s.parkedKeys()).isEqualTo(1);
    assertThat(s.outboxPending()).isZero();
    assertThat(s.outboxStuck()).isFalse();
  }
}
