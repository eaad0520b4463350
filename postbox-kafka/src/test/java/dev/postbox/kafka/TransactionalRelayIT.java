package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.LaneFencedException;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayPublisher.PendingPublish;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The transactional relay against the real broker: the next owner of a lane fences the previous
 * owner's producer (its open transaction aborted, its commit refused, nothing of it marked), a
 * {@code read_committed} reader sees no stale publish and nothing lost, and a crash between the
 * commit and the mark republishes (duplicates), never loses.
 */
@PostboxTest
class TransactionalRelayIT {

  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    Collections.reverse(closing);
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  private static Message order(String topic, String key, int seq) {
    return Message.builder(topic, "order.created")
        .key(key)
        .header("seq", Integer.toString(seq))
        .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
        .build();
  }

  private KafkaRelayPublisher publisher(PostboxTestContext ctx, String prefix) {
    KafkaRelayPublisher p =
        KafkaRelayPublisher.builder(ctx.bootstrapServers()).transactional(prefix).build();
    closing.add(p);
    return p;
  }

  @Test
  void theNextOwnerOfALaneFencesThePreviousOwnersOpenTransaction(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    Shop shop = new Shop(ctx.dataSource(), topic);
    String prefix = "fence-" + topic;
    LaneLease old = new LaneLease(5, 1);
    LaneLease next = new LaneLease(5, 2);
    List<Message> stale = List.of(order(topic, "k", 1), order(topic, "k", 2));
    List<Message> fresh = List.of(order(topic, "k", 3));

    KafkaRelayPublisher exOwner = publisher(ctx, prefix);
    exOwner.lanesOwned(List.of(old));
    PendingPublish inFlight = exOwner.send(stale, List.of(old, old)); // sent, not committed
    KafkaRelayPublisher successor = publisher(ctx, prefix);
    successor.lanesOwned(List.of(next)); // initTransactions: fences the ex-owner
    assertThat(successor.send(fresh, List.of(next)).outcomes())
        .allSatisfy(o -> assertThat(o).isInstanceOf(PublishOutcome.Acknowledged.class));

    assertThat(inFlight.outcomes())
        .as("the ex-owner's commit is refused: nothing of it may be marked")
        .allSatisfy(o ->
            assertThat(((PublishOutcome.Failed) o).error())
                .isInstanceOf(LaneFencedException.class));
    // it does not initialise the lane again under the lease it lost (that would fence the owner)
    exOwner.lanesOwned(List.of(old));
    assertThat(exOwner.send(List.of(order(topic, "k", 4)), List.of(old)).outcomes())
        .allSatisfy(o ->
            assertThat(((PublishOutcome.Failed) o).error())
                .isInstanceOf(LaneFencedException.class));

    var seen = shop.readUntil(ctx.bootstrapServers(), Duration.ofSeconds(30), r -> !r.isEmpty());
    assertThat(seen).as("read_committed: only the successor's record").hasSize(1);
    assertThat(header(seen.get(0), KafkaRecords.PB_RELAY_EPOCH)).isEqualTo("2");
    assertThat(header(seen.get(0), KafkaRecords.PB_RELAY_LANE)).isEqualTo("5");
  }

  @Test
  void aRelayPausedPastItsLeaseIsFencedAndReadCommittedSeesNoStalePublish(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 2);
    Shop shop = new Shop(ctx.dataSource(), topic);
    String prefix = "pause-" + topic;
    for (int i = 0; i < 200; i++) {
      shop.orderAndRecord("k" + (i % 10));
    }
    try (ChildJvm zombie =
        ChildJvm.builder(RelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "zombie", prefix)
            .start()) {
      zombie.awaitLogLine("relay started", Duration.ofSeconds(60));
      for (int i = 0; i < 200; i++) {
        shop.orderAndRecord("k" + (i % 10)); // keeps it busy: a batch may be open when it stops
      }
      zombie.pause(); // SIGSTOP: its 2 s leases run out while it cannot notice
      Relay successor =
          Relay.builder(PostgresRelayStore.create(ctx.dataSource()), publisher(ctx, prefix))
              .instanceId("successor")
              .batchSize(50)
              .leaseTtl(Duration.ofSeconds(2))
              .pollInterval(Duration.ofMillis(200))
              .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
              .build();
      closing.add(successor);
      successor.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> successor.ownedLanes().size() == 64);
      for (int i = 0; i < 200; i++) {
        shop.orderAndRecord("k" + (i % 10));
      }
      zombie.resume(); // wakes with stale leases and fenced producers
      for (int i = 0; i < 200; i++) {
        shop.orderAndRecord("k" + (i % 10));
      }
      var records =
          shop.readUntil(
              ctx.bootstrapServers(),
              Duration.ofSeconds(90),
              got -> Shop.messageIds(got).size() >= 800);
      DeliveryHistory.Report report = shop.check(records);
      assertThat(report.missing()).isZero();
      assertThat(report.orderViolations()).isZero();
      assertThat(stalePublishes(records)).as("stale publishes (epoch header)").isZero();
      await().atMost(Duration.ofSeconds(30)).until(() -> shop.pendingRows() == 0);
    }
  }

  @Test
  void aCrashBetweenTheCommitAndTheMarkRepublishesAndLosesNothing(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 2);
    Shop shop = new Shop(ctx.dataSource(), topic);
    String prefix = "crash-" + topic;
    for (int i = 0; i < 300; i++) {
      shop.orderAndRecord("order-" + (i % 13));
    }
    try (ChildJvm child =
        ChildJvm.builder(RelayChildMain.class)
            .args(ctx.jdbcUrl(), ctx.bootstrapServers(), "doomed", prefix)
            .systemProperty(CrashPoints.PROPERTY, "relay.after-ack-before-mark@2")
            .start()) {
      assertThat(child.waitFor(Duration.ofSeconds(60))).contains(CrashPoints.EXIT_CODE);
    }
    // at least one batch committed on the topic and never marked (the first batch may have left
    // rows of a lane whose producer was not initialised yet: they are pending too)
    assertThat(shop.pendingRows()).as("committed on the topic, never marked").isBetween(1L, 299L);
    Relay survivor =
        Relay.builder(PostgresRelayStore.create(ctx.dataSource()), publisher(ctx, prefix))
            .instanceId("survivor")
            .batchSize(100)
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(200))
            .build();
    closing.add(survivor);
    survivor.start();
    DeliveryHistory.Report report =
        shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(60));
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.duplicates())
        .as("the committed, unmarked batch (and the one sent meanwhile) published again")
        .isBetween(1L, 100L);
    await().atMost(Duration.ofSeconds(30)).until(() -> shop.pendingRows() == 0);
  }

  /**
   * Records of a lane whose epoch is lower than an epoch already seen for that lane earlier in
   * their partition.
   */
  static long stalePublishes(List<ConsumerRecord<byte[], byte[]>> records) {
    Map<String, Long> maxEpoch = new HashMap<>(); // partition/lane -> highest epoch so far
    long stale = 0;
    for (ConsumerRecord<byte[], byte[]> r : records) {
      String lane = r.partition() + "/" + header(r, KafkaRecords.PB_RELAY_LANE);
      long epoch = Long.parseLong(header(r, KafkaRecords.PB_RELAY_EPOCH));
      long max = maxEpoch.getOrDefault(lane, Long.MIN_VALUE);
      if (epoch < max) {
        stale++;
      }
      maxEpoch.put(lane, Math.max(max, epoch));
    }
    return stale;
  }

  private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    Header h = r.headers().lastHeader(name);
    assertThat(h).as(name + " header").isNotNull();
    return new String(h.value(), StandardCharsets.UTF_8);
  }
}
