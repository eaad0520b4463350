package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The CDC relay end to end: the test kit's PostgreSQL ({@code wal_level=logical}) streams outbox
 * inserts through a pgoutput slot to the real Kafka broker. Transactions hold several events of
 * several keys; each key's events carry a sequence number in commit order, and {@link
 * DeliveryHistory} checks the topic against the commits.
 */
@PostboxTest
class CdcRelayIT {

  private final List<CdcRelay> relays = new ArrayList<>();
  private final Outbox outbox = Outbox.postgres();
  private final Map<String, Long> seqs = new HashMap<>();
  private final List<String[]> commits = new ArrayList<>();
  private PostboxTestContext ctx;
  private String slot;

  @AfterEach
  void dropSlot() throws SQLException {
    relays.forEach(CdcRelay::close);
    if (slot != null) {
      try (Connection c = ctx.dataSource().getConnection()) {
        // a killed child's walsender may still hold the slot for a moment
        await()
            .atMost(Duration.ofSeconds(60))
            .ignoreExceptions()
            .until(() -> {
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT count(pg_drop_replication_slot(slot_name))"
                          + " FROM pg_replication_slots WHERE slot_name = ?")) {
                ps.setString(1, slot);
                ps.execute();
              }
              return true;
            });
        try (Statement s = c.createStatement()) {
          s.execute("DROP PUBLICATION IF EXISTS " + slot);
        }
      }
    }
  }

  private CdcRelay relay(String id, int batchSize) {
    CdcRelay r =
        CdcRelay.builder(
                ctx.dataSource(),
                ctx.jdbcUrl(),
                KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .instanceId(id)
            .batchSize(batchSize)
            .standbyRetryInterval(Duration.ofMillis(100))
            .leaseTtl(Duration.ofSeconds(3))
            .build();
    relays.add(r);
    slot = r.slotName();
    r.start();
    return r;
  }

  private Shop shop(PostboxTestContext ctx, int partitions) throws SQLException {
    this.ctx = ctx;
    return new Shop(ctx.dataSource(), ctx.topic("orders", partitions));
  }

  /** One transaction writing one event per key of {@code keys}, in that order. */
  private void transaction(Shop shop, List<String> keys) {
    List<Message> messages = new ArrayList<>();
    synchronized (seqs) {
      for (String k : keys) {
        long seq = seqs.merge(k, 1L, Long::sum);
        messages.add(
            Message.builder(shop.topic, "order.created")
                .key(k)
                .header("seq", Long.toString(seq))
                .jsonPayload("{\"key\":\"" + k + "\",\"seq\":" + seq + "}")
                .build());
      }
      // committed under the lock, so each key's sequence is its commit order
      outbox.inTransaction(
          ctx.dataSource(),
          tx -> {
            tx.writeAll(messages);
            return null;
          });
      for (Message m : messages) {
        commits.add(
            new String[] {m.key().orElseThrow(), m.header("seq").orElseThrow(), m.id().toString()});
      }
    }
  }

  private void writeMany(Shop shop, int transactions, int perTx, int keys) {
    for (int t = 0; t < transactions; t++) {
      List<String> ks = new ArrayList<>();
      for (int i = 0; i < perTx; i++) {
        ks.add("order-" + ((t * perTx + i) * 7 % keys));
      }
      transaction(shop, ks);
    }
  }

  private DeliveryHistory.Report readAndCheck(Shop shop) {
    List<String> expected;
    synchronized (seqs) {
      expected = commits.stream().map(c -> c[2]).toList();
    }
    return check(
        shop.readUntil(
            ctx.bootstrapServers(),
            Duration.ofSeconds(120),
            r -> Shop.messageIds(r).containsAll(expected)));
  }

  /**
   * Waits until every committed event is on the topic, closes {@code survivor} (so every batch it
   * sent has settled and its count is final), then checks the whole topic as it is: a batch the
   * survivor sent again after a failed attempt may land behind the last new event, and would be
   * missed by a read that stops at the last new event.
   */
  private DeliveryHistory.Report settledAndCheck(Shop shop, CdcRelay survivor) {
    readAndCheck(shop);
    survivor.close();
    return check(shop.readToEnd(ctx.bootstrapServers(), Duration.ofSeconds(120)));
  }

  private DeliveryHistory.Report check(List<ConsumerRecord<byte[], byte[]>> got) {
    DeliveryHistory h = new DeliveryHistory();
    synchronized (seqs) {
      for (String[] c : commits) {
        h.committed(c[0], Long.parseLong(c[1]), c[2]);
      }
    }
    for (ConsumerRecord<byte[], byte[]> r : got) {
      Message m = KafkaRecords.fromRecord(r);
      h.observed(
          m.key().orElseThrow(), Long.parseLong(m.header("seq").orElseThrow()), m.id().toString());
    }
    return h.report();
  }

  @Test
  void publishesEveryCommittedEventInPerKeyCommitOrderAndNothingRolledBack(PostboxTestContext ctx)
      throws Exception {
    Shop shop = shop(ctx, 3);
    relay("cdc-1", 100);
    ExecutorService writers = Executors.newFixedThreadPool(3);
    List<Future<?>> done = new ArrayList<>();
    for (int w = 0; w < 3; w++) {
      done.add(writers.submit(() -> writeMany(shop, 100, 4, 23))); // 1,200 events, 4 per tx
    }
    try (Connection c = ctx.dataSource().getConnection()) {
      c.setAutoCommit(false);
      outbox.write(c, Message.builder(shop.topic, "rolled.back").key("order-1").build());
      c.rollback();
    }
    for (Future<?> f : done) {
      f.get();
    }
    writers.shutdown();
    DeliveryHistory.Report report = readAndCheck(shop);
    assertThat(report.committed()).isEqualTo(1200);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.unexpected()).as("rolled back, never published").isZero();
    assertThat(report.duplicates()).isZero();
    await().atMost(Duration.ofSeconds(60)).until(() -> shop.pendingRows() == 0);
  }

  @Test
  void aRelayKilledAfterTheBrokerAckAndBeforeTheMarkLosesNothingAndRepublishesABoundedTail(
      PostboxTestContext ctx) throws Exception {
    Shop shop = shop(ctx, 2);
    relay("setup", 50).close(); // creates the publication and the slot, so the backlog is streamed
    writeMany(shop, 100, 3, 13); // 300 events, 3 per transaction: a batch of 50 ends mid-one
    try (ChildJvm child =
        ChildJvm.builder(CdcRelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "doomed", "50")
            .systemProperty(CrashPoints.PROPERTY, "cdc.after-ack-before-mark@3")
            .start()) {
      assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      assertThat(child.logTail(50)).contains(CrashPoints.MARKER + " cdc.after-ack-before-mark");
    }
    // the dead relay sends nothing more: what it left on the broker is the topic as it is now
    long beforeRestart = shop.readToEnd(ctx.bootstrapServers(), Duration.ofSeconds(120)).size();
    // three batches settled, and up to maxInFlightBatches - 1 (3) later ones already on the broker
    assertThat(beforeRestart)
        .as("three batches acknowledged, at most three more in flight")
        .isBetween(3L, 300L);
    CdcRelay survivor = relay("survivor", 50);
    DeliveryHistory.Report report = settledAndCheck(shop, survivor);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    // The third batch was acknowledged and never marked, so the transactions it touched were
    // never confirmed: at least one event comes again, and never more than the dead relay sent.
    assertThat(report.duplicates()).isBetween(1L, beforeRestart);
    assertThat(survivor.stats().published()).isEqualTo(300 - beforeRestart + report.duplicates());
  }

  @Test
  void aRelayKilledAfterTheAckOfABatchEndingInsideATransactionRepublishesThatTransactionWhole(
      PostboxTestContext ctx) throws Exception {
    Shop shop = shop(ctx, 2);
    relay("setup", 50).close(); // creates the publication and the slot, so the backlog is streamed
    writeMany(shop, 100, 3, 13); // 300 events, 3 per transaction: a batch of 50 ends mid-one
    try (ChildJvm child =
        ChildJvm.builder(CdcRelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "doomed", "50")
            .systemProperty(CrashPoints.PROPERTY, CrashPoints.CDC_MID_TRANSACTION + "@1")
            .start()) {
      assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      assertThat(child.logTail(50))
          .contains(CrashPoints.MARKER + " " + CrashPoints.CDC_MID_TRANSACTION);
    }
    long beforeRestart = shop.readToEnd(ctx.bootstrapServers(), Duration.ofSeconds(120)).size();
    assertThat(beforeRestart)
        .as("a batch ending inside a transaction was acknowledged")
        .isPositive();
    CdcRelay survivor = relay("survivor", 50);
    DeliveryHistory.Report report = settledAndCheck(shop, survivor);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    // the cut transaction was never confirmed: its acknowledged part comes again (at least the
    // event before the cut), and nothing beyond what the dead relay sent
    assertThat(report.duplicates()).isBetween(1L, beforeRestart);
  }

  @Test
  void aStandbyTakesOverWhenTheActiveRelayIsKilled(PostboxTestContext ctx) throws Exception {
    Shop shop = shop(ctx, 2);
    try (ChildJvm active =
        ChildJvm.builder(CdcRelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "active", "100")
            .start()) {
      active.awaitLogLine("cdc relay active", Duration.ofSeconds(120));
      CdcRelay standby = relay("standby", 100);
      writeMany(shop, 50, 4, 11);
      List<String> firstHalf;
      synchronized (seqs) {
        firstHalf = commits.stream().map(c -> c[2]).toList();
      }
      shop.readUntil(
          ctx.bootstrapServers(),
          Duration.ofSeconds(120),
          r -> Shop.messageIds(r).containsAll(firstHalf));
      assertThat(standby.active()).isFalse();
      assertThat(standby.stats().published()).isZero();
      active.kill();
      await().atMost(Duration.ofSeconds(120)).until(standby::active);
    }
    writeMany(shop, 50, 4, 11);
    DeliveryHistory.Report report = readAndCheck(shop);
    assertThat(report.committed()).isEqualTo(400);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
  }
}
