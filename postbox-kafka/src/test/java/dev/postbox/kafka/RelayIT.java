package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@PostboxTest
class RelayIT {

  private final List<Relay> relays = new ArrayList<>();

  @AfterEach
  void closeRelays() {
    relays.forEach(Relay::close);
  }

  private Relay relay(PostboxTestContext ctx, String id) {
    return relay(ctx, id, KafkaRelayPublisher.builder(ctx.bootstrapServers()).build());
  }

  private Relay relay(PostboxTestContext ctx, String id, KafkaRelayPublisher publisher) {
    Relay r =
        Relay.builder(PostgresRelayStore.create(ctx.dataSource()), publisher)
            .instanceId(id)
            .batchSize(100)
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(200))
            .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
            .build();
    relays.add(r);
    r.start();
    return r;
  }

  @Test
  void publishesEveryCommittedMessageInKeyOrderAndMarksIt(PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 3));
    for (int i = 0; i < 600; i++) {
      shop.orderAndRecord("order-" + (i % 37));
    }
    relay(ctx, "r1");
    DeliveryHistory.Report report =
        shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(60));
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.duplicates()).isZero();
    await().atMost(Duration.ofSeconds(30)).until(() -> shop.pendingRows() == 0);
  }

  @ParameterizedTest(name = "{0} relays")
  @ValueSource(ints = {2, 3})
  void severalRelaysKeepPerKeyCommitOrder(int relayCount, PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 4));
    relay(ctx, "r0");
    int total = 2400;
    AtomicInteger next = new AtomicInteger();
    ExecutorService writers = Executors.newFixedThreadPool(4);
    List<Future<?>> done = new ArrayList<>();
    for (int w = 0; w < 4; w++) {
      done.add(
          writers.submit(() -> {
            int i;
            while ((i = next.getAndIncrement()) < total) {
              shop.orderAndRecord("k" + (i * 7 % 50)); // 50 interleaved keys, shared by writers
            }
          }));
    }
    // More relays join while the writers run: lanes move between instances under load.
    for (int r = 1; r < relayCount; r++) {
      int threshold = total * r / relayCount;
      await().atMost(Duration.ofSeconds(60)).until(() -> next.get() >= threshold);
      relay(ctx, "r" + r);
    }
    for (Future<?> f : done) {
      f.get();
    }
    writers.shutdown();
    DeliveryHistory.Report report =
        shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(120));
    assertThat(report.committed()).isEqualTo(total);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> assertThat(relays).allSatisfy(r -> assertThat(r.ownedLanes()).isNotEmpty()));
    // lanes in transit (released, not yet taken) settle within a heartbeat or two
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> relays.stream().mapToInt(r -> r.ownedLanes().size()).sum() == 64);
  }

  @Test
  void aRowWhoseTransactionCommitsAfterAHigherPositionIsStillPublished(PostboxTestContext ctx)
      throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    relay(ctx, "r1");
    Message early =
        Message.builder(shop.topic, "order.created").key("slow").header("seq", "1").build();
    Message late =
        Message.builder(shop.topic, "order.created").key("fast").header("seq", "1").build();
    try (Connection slow = ctx.dataSource().getConnection()) {
      slow.setAutoCommit(false);
      shop.outbox.write(slow, early); // takes the lower position, stays open
      shop.outbox.inTransaction(
          ctx.dataSource(),
          tx -> {
            tx.write(late);
            return null;
          });
      // the higher position is published while the lower one is still uncommitted
      var first =
          shop.readUntil(ctx.bootstrapServers(), Duration.ofSeconds(30), got -> !got.isEmpty());
      assertThat(Shop.messageIds(first)).containsExactly(late.id().toString());
      slow.commit();
    }
    var all =
        shop.readUntil(ctx.bootstrapServers(), Duration.ofSeconds(30), got -> got.size() >= 2);
    assertThat(Shop.messageIds(all))
        .containsExactlyInAnyOrder(early.id().toString(), late.id().toString());
    assertThat(all).hasSize(2);
  }

  @Test
  void aRolledBackBusinessTransactionPublishesNothing(PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    relay(ctx, "r1");
    try (Connection c = ctx.dataSource().getConnection()) {
      c.setAutoCommit(false);
      shop.outbox.write(c, Message.builder(shop.topic, "order.created").key("k").build());
      c.rollback();
    }
    Message marker = Message.builder(shop.topic, "marker").key("k").build();
    shop.outbox.inTransaction(
        ctx.dataSource(),
        tx -> {
          tx.write(marker);
          return null;
        });
    var got = shop.readUntil(ctx.bootstrapServers(), Duration.ofSeconds(30), r -> !r.isEmpty());
    assertThat(Shop.messageIds(got)).containsExactly(marker.id().toString());
  }

  @Test
  void aRelayKilledAfterTheBrokerAckAndBeforeTheMarkLosesNothing(PostboxTestContext ctx)
      throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 2));
    for (int i = 0; i < 300; i++) {
      shop.orderAndRecord("order-" + (i % 13));
    }
    try (ChildJvm child =
        ChildJvm.builder(RelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "doomed")
            .systemProperty(CrashPoints.PROPERTY, "relay.after-ack-before-mark@2")
            .start()) {
      assertThat(child.waitFor(Duration.ofSeconds(60))).contains(CrashPoints.EXIT_CODE);
      assertThat(child.logTail(50)).contains(CrashPoints.MARKER + " relay.after-ack-before-mark");
    }
    // The second batch reached the topic but was never marked.
    long pendingAfterCrash = shop.pendingRows();
    assertThat(pendingAfterCrash).isEqualTo(300 - 50);
    relay(ctx, "survivor"); // takes the lanes once the dead relay's leases expire
    DeliveryHistory.Report report =
        shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(60));
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    // The relay sends batch 3 while it marks batch 2 (pipelined), so the crash before that mark
    // may leave batch 3 on the topic too: both are published again, with the same ids.
    assertThat(report.duplicates())
        .as("the unmarked batch (and the one sent meanwhile) published again, same ids")
        .isBetween(50L, 100L);
    await().atMost(Duration.ofSeconds(30)).until(() -> shop.pendingRows() == 0);
  }

  @Test
  void zeroRetentionDeletesPublishedRowsAndRetentionPurgesOldOnes(PostboxTestContext ctx)
      throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 1));
    for (int i = 0; i < 20; i++) {
      shop.orderAndRecord("k" + i);
    }
    Relay r =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .retention(Duration.ofMillis(1))
            .purgeInterval(Duration.ofMillis(100))
            .pollInterval(Duration.ofMillis(100))
            .build();
    relays.add(r);
    r.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> shop.totalRows() == 0);
    r.close();
    Relay deleting =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .retention(Duration.ZERO)
            .pollInterval(Duration.ofMillis(100))
            .build();
    relays.add(deleting);
    deleting.start();
    for (int i = 0; i < 20; i++) {
      shop.orderAndRecord("k" + i);
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> deleting.stats().published() == 20);
    assertThat(shop.totalRows()).isZero();
    assertThat(shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(30)).missing())
        .isZero();
  }

  @Test
  void aRelayPausedPastItsLeaseIsFencedAndOrderHolds(PostboxTestContext ctx) throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 2));
    for (int i = 0; i < 100; i++) {
      shop.orderAndRecord("k" + (i % 10));
    }
    try (ChildJvm zombie =
        ChildJvm.builder(RelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "zombie")
            .start()) {
      zombie.awaitLogLine("relay started", Duration.ofSeconds(60));
      await().atMost(Duration.ofSeconds(60)).until(() -> shop.pendingRows() == 0);
      zombie.pause(); // SIGSTOP: its 2 s leases run out while it cannot notice
      Relay successor = relay(ctx, "successor");
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> successor.ownedLanes().size() == 64); // took every lane under new epochs
      for (int i = 0; i < 200; i++) {
        shop.orderAndRecord("k" + (i % 10));
      }
      zombie.resume(); // wakes with stale leases: must not mark, must not break order
      for (int i = 0; i < 200; i++) {
        shop.orderAndRecord("k" + (i % 10));
      }
      DeliveryHistory.Report report =
          shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(60));
      assertThat(report.missing()).isZero();
      assertThat(report.orderViolations()).isZero();
      await().atMost(Duration.ofSeconds(30)).until(() -> shop.pendingRows() == 0);
      assertThat(zombie.isAlive()).isTrue();
    }
  }

  @Test
  void atMostOncePublisherSendsWithoutTheOutbox(PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("presence", 1);
    Shop reader = new Shop(ctx.dataSource(), topic);
    try (KafkaAtMostOncePublisher publisher =
        KafkaAtMostOncePublisher.builder(ctx.bootstrapServers()).build()) {
      for (int i = 0; i < 10; i++) {
        publisher.send(Message.builder(topic, "user.seen").key("u" + i).build());
      }
      assertThat(publisher.sent()).isEqualTo(10);
    }
    var got = reader.readUntil(ctx.bootstrapServers(), Duration.ofSeconds(30), r -> r.size() >= 10);
    assertThat(got).hasSize(10);
    assertThat(reader.totalRows()).as("no outbox involved").isZero();
  }
}
