package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.core.spi.RelayStore.Hold;
import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.MessageTracer;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.OutboxOperations;
import dev.postbox.jdbc.OutboxOperations.HoldingRow;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An outbox row that cannot be published (too large for the broker, an invalid topic name, a row
 * the relay cannot read, a topic that does not exist on a broker without topic auto-creation, as
 * the test kit's) holds the later rows of its key, or its topic, while rows of other keys written
 * after it are published; an operator retries or skips it and its key goes on in order. Issue 13,
 * defect 5.
 */
@PostboxTest
class UnpublishableRowIT {

  private static final Duration WAIT = Duration.ofSeconds(60);

  private final List<Relay> relays = new ArrayList<>();

  @AfterEach
  void closeRelays() {
    relays.forEach(Relay::close);
  }

  @Test
  void anOversizedRowHoldsItsKeyInOrderWhileLaterKeysFlowAndASkipLetsTheKeyGoOn(
      PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    write(shop, msg(shop.topic, "K", 1));
    Message big = write(shop, oversized(shop.topic, "K", 2));
    write(shop, msg(shop.topic, "K", 3), msg(shop.topic, "K", 4));
    List<Message> others = writeOthers(shop, shop.topic);
    relay(ctx, UnpublishableRows.BLOCK_KEY);

    List<ConsumerRecord<byte[], byte[]>> got = awaitOnTopic(ctx, shop, others);
    assertThat(seqsOf(got, "K"))
        .as("K's later rows wait behind the row that failed")
        .containsExactly(1L);
    OutboxOperations ops = OutboxOperations.postgres(ctx.dataSource());
    HoldingRow row = onlyHoldingRow(ops);
    assertThat(row.messageId()).isEqualTo(big.id());
    assertThat(row.hold()).isEqualTo(Hold.KEY);
    assertThat(row.error()).contains("RecordTooLargeException");
    assertThat(row.heldRows()).isEqualTo(2);
    assertThat(row.heldKeys()).isEqualTo(1);
    OperationsProbe.Snapshot probe = OperationsProbe.postgres(ctx.dataSource()).snapshot();
    assertThat(probe.outboxHolding()).isEqualTo(1);
    assertThat(probe.outboxHeld()).isEqualTo(2);
    MessageTracer tracer = MessageTracer.postgres(ctx.dataSource());
    assertThat(details(tracer.trace(big.id())))
        .anyMatch(d -> d.contains("it holds the later rows of key 'K'"));

    assertThat(ops.skip(row.position(), "test order, too large to ever publish", "ops-test"))
        .isTrue();
    got = readUntil(ctx, shop, r -> seqsOf(r, "K").size() >= 3);
    assertThat(seqsOf(got, "K")).containsExactly(1L, 3L, 4L);
    assertThat(ops.holding()).isEmpty();
    assertThat(details(tracer.trace(big.id())))
        .anyMatch(d -> d.contains("skipped (never published) by ops-test: test order"));
    assertThat(ops.retry(row.position(), "ops-test")).as("a skipped row holds nothing").isFalse();
  }

  @Test
  void aRowWithAnInvalidTopicNameHoldsItsKeyAndOtherKeysFlow(PostboxTestContext ctx)
      throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    // The envelope refuses an invalid topic name at write time, so such a row comes from elsewhere
    // (written by hand, by another tool, or renamed): the relay reads it as unpublishable.
    Message bad = write(shop, msg(shop.topic, "K", 1));
    sql(ctx, "UPDATE postbox_outbox SET topic = 'no spaces allowed!' WHERE message_id = ?", bad);
    write(shop, msg(shop.topic, "K", 2), msg(shop.topic, "K", 3));
    List<Message> others = writeOthers(shop, shop.topic);
    relay(ctx, UnpublishableRows.BLOCK_KEY);

    List<ConsumerRecord<byte[], byte[]>> got = awaitOnTopic(ctx, shop, others);
    assertThat(seqsOf(got, "K")).isEmpty();
    OutboxOperations ops = OutboxOperations.postgres(ctx.dataSource());
    HoldingRow row = onlyHoldingRow(ops);
    assertThat(row.messageId()).isEqualTo(bad.id());
    assertThat(row.hold()).isEqualTo(Hold.KEY);
    assertThat(row.error()).contains("'no spaces allowed!' is not a legal topic name");
    assertThat(row.heldRows()).isEqualTo(2);

    assertThat(ops.skip(row.position(), "written to a misspelt topic", "ops-test")).isTrue();
    got = readUntil(ctx, shop, r -> seqsOf(r, "K").size() >= 2);
    assertThat(seqsOf(got, "K")).containsExactly(2L, 3L);
  }

  @Test
  void aMissingTopicHoldsItsTopicAndKeyUntilCreatedThenARetryPublishesInOrder(
      PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    String missing = "not-yet-" + UUID.randomUUID();
    Message first = write(shop, msg(missing, "K", 1));
    write(shop, msg(missing, "K", 2), msg(missing, "J", 1), msg(shop.topic, "K", 3));
    List<Message> others = writeOthers(shop, shop.topic);
    relay(ctx, UnpublishableRows.BLOCK_KEY);

    List<ConsumerRecord<byte[], byte[]>> got = awaitOnTopic(ctx, shop, others);
    assertThat(seqsOf(got, "K")).as("K's row on another topic waits too").isEmpty();
    OutboxOperations ops = OutboxOperations.postgres(ctx.dataSource());
    HoldingRow row = onlyHoldingRow(ops);
    assertThat(row.messageId()).isEqualTo(first.id());
    assertThat(row.hold()).isEqualTo(Hold.TOPIC);
    assertThat(row.error()).contains("UnknownTopicOrPartitionException").contains(missing);
    assertThat(row.heldRows()).as("K#2, J#1 on the topic, K#3 on the other").isEqualTo(3);
    assertThat(row.heldKeys()).isEqualTo(2);

    ctx.kafka().createTopic(missing, 1);
    assertThat(ops.retry(row.position(), "ops-test")).isTrue();
    Shop missingTopic = new Shop(ctx.dataSource(), missing);
    List<ConsumerRecord<byte[], byte[]>> onMissing =
        readUntil(ctx, missingTopic, r -> r.size() >= 3);
    assertThat(seqsOf(onMissing, "K")).containsExactly(1L, 2L);
    assertThat(seqsOf(onMissing, "J")).containsExactly(1L);
    got = readUntil(ctx, shop, r -> !seqsOf(r, "K").isEmpty());
    assertThat(seqsOf(got, "K")).containsExactly(3L);
    await().atMost(WAIT).until(() -> shop.pendingRows() == 0);
    assertThat(details(MessageTracer.postgres(ctx.dataSource()).trace(first.id())))
        .anyMatch(d -> d.contains("retried by ops-test"))
        .anyMatch(d -> d.startsWith("published to " + missing));
  }

  @Test
  void aRowTheRelayCannotReadHoldsItsKeyAndOtherKeysFlow(PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    write(shop, msg(shop.topic, "K", 1));
    Message unreadable = write(shop, msg(shop.topic, "K", 2));
    // headers that are not a map of strings, as a hand-made or foreign row might have
    sql(
        ctx,
        "UPDATE postbox_outbox SET headers = '{\"seq\": {\"not\": \"a string\"}}'"
            + " WHERE message_id = ?",
        unreadable);
    write(shop, msg(shop.topic, "K", 3));
    List<Message> others = writeOthers(shop, shop.topic);
    relay(ctx, UnpublishableRows.BLOCK_KEY);

    List<ConsumerRecord<byte[], byte[]>> got = awaitOnTopic(ctx, shop, others);
    assertThat(seqsOf(got, "K")).containsExactly(1L);
    OutboxOperations ops = OutboxOperations.postgres(ctx.dataSource());
    HoldingRow row = onlyHoldingRow(ops);
    assertThat(row.messageId()).isEqualTo(unreadable.id());
    assertThat(row.hold()).isEqualTo(Hold.KEY);
    assertThat(row.error()).contains("cannot be read");
    assertThat(row.heldRows()).isEqualTo(1);

    assertThat(ops.skip(row.position(), "corrupt headers, re-sent by hand", "ops-test")).isTrue();
    got = readUntil(ctx, shop, r -> seqsOf(r, "K").size() >= 2);
    assertThat(seqsOf(got, "K")).containsExactly(1L, 3L);
  }

  @Test
  void theSkipPolicySkipsTheRowAndItsKeyGoesOnWithoutIt(PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    write(shop, msg(shop.topic, "K", 1));
    Message big = write(shop, oversized(shop.topic, "K", 2));
    write(shop, msg(shop.topic, "K", 3));
    List<Message> others = writeOthers(shop, shop.topic);
    relay(ctx, UnpublishableRows.SKIP);

    awaitOnTopic(ctx, shop, others);
    List<ConsumerRecord<byte[], byte[]>> got =
        readUntil(ctx, shop, r -> seqsOf(r, "K").size() >= 2);
    assertThat(seqsOf(got, "K")).containsExactly(1L, 3L);
    assertThat(OutboxOperations.postgres(ctx.dataSource()).holding()).isEmpty();
    try (Connection c = ctx.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT failed_at IS NOT NULL, last_error FROM postbox_outbox WHERE message_id = ?")) {
      ps.setObject(1, big.id());
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getBoolean(1)).isTrue();
        assertThat(rs.getString(2)).contains("RecordTooLargeException");
      }
    }
  }

  // ------------------------------------------------------------------ helpers

  private void relay(PostboxTestContext ctx, UnpublishableRows policy) {
    Relay r =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(ctx.bootstrapServers())
                    .metadataWait(Duration.ofSeconds(2))
                    .build())
            .instanceId("r-" + policy)
            .batchSize(100)
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(200))
            .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
            .unpublishableRows(policy)
            .build();
    relays.add(r);
    r.start();
  }

  private static Message msg(String topic, String key, long seq) {
    return Message.builder(topic, "order.created")
        .key(key)
        .header("seq", Long.toString(seq))
        .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
        .build();
  }

  /** Larger than the producer's max.request.size (1 MiB) and the broker's message.max.bytes. */
  private static Message oversized(String topic, String key, long seq) {
    byte[] payload = new byte[2 * 1024 * 1024];
    java.util.Arrays.fill(payload, (byte) 'x');
    return Message.builder(topic, "order.created")
        .key(key)
        .header("seq", Long.toString(seq))
        .payload(new Payload(payload, "application/octet-stream"))
        .build();
  }

  /** Writes each message in a transaction of its own, in order; returns the first. */
  private static Message write(Shop shop, Message... messages) {
    for (Message m : messages) {
      shop.outbox.inTransaction(
          shop.ds,
          tx -> {
            tx.write(m);
            return null;
          });
    }
    return messages[0];
  }

  /** Rows of eight other keys, written after the failing row and its key's later rows. */
  private static List<Message> writeOthers(Shop shop, String topic) {
    List<Message> others = new ArrayList<>();
    for (int seq = 1; seq <= 5; seq++) {
      for (int k = 0; k < 8; k++) {
        others.add(write(shop, msg(topic, "other-" + k, seq)));
      }
    }
    return others;
  }

  /** Waits until every one of {@code expected} is on the shop's topic; returns what was read. */
  private static List<ConsumerRecord<byte[], byte[]>> awaitOnTopic(
      PostboxTestContext ctx, Shop shop, List<Message> expected) {
    List<String> ids = expected.stream().map(m -> m.id().toString()).toList();
    List<ConsumerRecord<byte[], byte[]>> got =
        readUntil(ctx, shop, r -> Shop.messageIds(r).containsAll(ids));
    assertThat(Shop.messageIds(got)).as("every other key published").containsAll(ids);
    for (int k = 0; k < 8; k++) {
      assertThat(seqsOf(got, "other-" + k)).containsExactly(1L, 2L, 3L, 4L, 5L);
    }
    return got;
  }

  private static List<ConsumerRecord<byte[], byte[]>> readUntil(
      PostboxTestContext ctx,
      Shop shop,
      java.util.function.Predicate<List<ConsumerRecord<byte[], byte[]>>> done) {
    return shop.readUntil(ctx.bootstrapServers(), WAIT, done);
  }

  /** The seq headers of {@code key}'s records, in topic order. */
  private static List<Long> seqsOf(List<ConsumerRecord<byte[], byte[]>> records, String key) {
    List<Long> seqs = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      Message m = KafkaRecords.fromRecord(r);
      if (m.key().equals(java.util.Optional.of(key))) {
        seqs.add(Long.parseLong(m.header("seq").orElseThrow()));
      }
    }
    return seqs;
  }

  private static void sql(PostboxTestContext ctx, String update, Message m) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(update)) {
      ps.setObject(1, m.id());
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  private static HoldingRow onlyHoldingRow(OutboxOperations ops) {
    await().atMost(WAIT).until(() -> !ops.holding().isEmpty());
    List<HoldingRow> rows = ops.holding();
    assertThat(rows).hasSize(1);
    return rows.get(0);
  }

  private static List<String> details(MessageTrace trace) {
    return trace.steps().stream().map(MessageTrace.Step::detail).toList();
  }
}
