package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The relay and an effectively-once subscriber on a three-broker cluster (combined mode,
 * replication factor 3, {@code min.insync.replicas=2}) while a broker they depend on is killed with
 * {@code kill -9} mid-stream and started again. The kill happens at a counted point of the stream,
 * never after a sleep.
 */
@PostboxTest
class KafkaClusterFailoverIT extends Subscribers {

  private static final int KEYS = 30;

  private static KafkaCluster cluster;

  // each broker in its own network namespace where this user may make them (root: CI), so that
  // one can be cut off from the others
  private static final java.util.Optional<String> NO_NETWORKS = KafkaCluster.whyNoOwnNetworks();

  @BeforeAll
  static void startCluster() {
    cluster = KafkaCluster.builder().ownNetworks(NO_NETWORKS.isEmpty()).build();
    cluster.start();
  }

  @AfterAll
  static void closeCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @BeforeEach
  void healCluster() {
    cluster.heal();
  }

  @Test
  void theRelayLosesNothingAndKeepsKeyOrderWhenAPartitionLeaderIsKilledMidStream(
      PostboxTestContext ctx) throws Exception {
    String topic = ClusterRelays.topic(cluster, "orders", 3);
    Shop shop = new Shop(ctx.dataSource(), topic);
    for (int i = 0; i < 1500; i++) {
      shop.orderAndRecord("k" + (i % KEYS));
    }
    int victim = cluster.leaderOf(topic, 0).orElseThrow();
    CountDownLatch killed = new CountDownLatch(1);
    // on the relay's thread, right after a batch was marked: the next batch is already in flight
    ClusterRelays.Seen seen =
        new ClusterRelays.Seen(
            600,
            n -> {
              cluster.kill(victim);
              killed.countDown();
            });
    try (Relay relay =
        ClusterRelays.start(ctx.dataSource(), cluster, Duration.ofSeconds(120), seen)) {
      assertThat(killed.await(120, TimeUnit.SECONDS)).as("killed after 600 acks").isTrue();
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(() -> cluster.leaderOf(topic, 0).orElse(victim) != victim);
      for (int i = 0; i < 1000; i++) { // written while the old leader is down
        shop.orderAndRecord("k" + (i % KEYS));
      }
      cluster.start(victim);
      for (int i = 0; i < 500; i++) {
        shop.orderAndRecord("k" + (i % KEYS));
      }
      DeliveryHistory.Report report =
          shop.readAndCheck(cluster.bootstrapServers(), Duration.ofSeconds(120));
      Relay.Stats stats = relay.stats();
      System.out.printf(
          "leader kill: %s; relay %s; failures seen %d%n", report, stats, seen.failures.size());
      assertThat(report.committed()).isEqualTo(3000);
      assertThat(report.missing()).isZero();
      assertThat(report.unexpected()).isZero();
      assertThat(report.orderViolations()).isZero();
      if (stats.publishFailures() == 0) {
        // the idempotent producer retried the moved partition itself: no resend, no copy
        assertThat(report.duplicates()).isZero();
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> shop.pendingRows() == 0);
    }
  }

  @Test
  void anEffectivelyOnceSubscriberAppliesEachMessageOnceInKeyOrderWhenItsCoordinatorIsKilled(
      PostboxTestContext ctx) throws Exception {
    String topic = ClusterRelays.topic(cluster, "payments", 3);
    String group = "ledger-" + topic;
    try (Effects fx = new Effects(ctx.dataSource(), cluster.bootstrapServers())) {
      Subscription sub = effectivelyOnce(group, topic);
      AtomicInteger handled = new AtomicInteger();
      AtomicBoolean held = new AtomicBoolean();
      CountDownLatch holding = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(cluster.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .handler(d -> {
                    // the 400th delivery waits, inside its inbox transaction, for the kill
                    if (handled.incrementAndGet() == 400 && held.compareAndSet(false, true)) {
                      holding.countDown();
                      Effects.awaitQuietly(release);
                    }
                    Effects.apply(d.connection().orElseThrow(), sub.name(), d);
                  }));
      int perKey = 80;
      fx.publishAll(messages(topic, 0, perKey / 2));
      assertThat(holding.await(120, TimeUnit.SECONDS)).isTrue();
      int coordinator = cluster.coordinatorOf(group);
      cluster.kill(coordinator);
      release.countDown();
      fx.publishAll(messages(topic, perKey / 2, perKey)); // after the kill
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(() -> cluster.coordinatorOf(group) != coordinator);
      cluster.start(coordinator);
      int total = KEYS * perKey;
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> fx.distinctEffects(sub.name()) == total && s.inFlight() == 0);
      System.out.printf(
          "coordinator kill: broker %d; %d effects; handler calls %d; %s%n",
          coordinator, fx.effects(sub.name()), handled.get(), s.stats());
      assertThat(fx.effects(sub.name())).as("one effect per message").isEqualTo(total);
      Map<String, List<Long>> order = fx.effectOrder(sub.name());
      assertThat(order).hasSize(KEYS);
      List<Long> expected = LongStream.range(0, perKey).boxed().toList();
      order.forEach((key, seqs) -> assertThat(seqs).as("effects of %s", key).isEqualTo(expected));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              fx.committedOffset(group, topic, 0)
                      + fx.committedOffset(group, topic, 1)
                      + fx.committedOffset(group, topic, 2)
                  == total);
    }
  }

  /**
   * The group's coordinator cut off from the other brokers, its members still reaching it: it goes
   * on answering their heartbeats while the other brokers' new coordinator may hand the partitions
   * on, but it can acknowledge no offset commit. The subscriber's membership fence must shut (its
   * records wait) because no commit succeeds, although every heartbeat does; after the reconnect,
   * every message is applied once, in key order.
   */
  @Test
  void aSubscriberWhoseCoordinatorIsCutOffFromTheOtherBrokersHoldsItsRecordsBack(
      PostboxTestContext ctx) throws Exception {
    assumeTrue(NO_NETWORKS.isEmpty(), "no broker cut off here: " + NO_NETWORKS.orElse(""));
    String topic = ClusterRelays.topic(cluster, "refunds", 3);
    String group = "refunds-" + topic;
    try (Effects fx = new Effects(ctx.dataSource(), cluster.bootstrapServers())) {
      Subscription sub = effectivelyOnce(group, topic);
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(cluster.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  // a 2.25 s fence: (6 s - 1.5 s) / 2
                  .consumerProperty("session.timeout.ms", 6_000)
                  .consumerProperty("heartbeat.interval.ms", 1_500)
                  .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d)));
      int perKey = 10;
      fx.publishAll(messages(topic, 0, perKey / 2));
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> fx.distinctEffects(sub.name()) == KEYS * perKey / 2);
      assertThat(s.state().fenced()).isFalse();

      int coordinator = cluster.coordinatorOf(group);
      cluster.cutOff(coordinator);
      List<Future<RecordMetadata>> sent;
      try {
        await().atMost(Duration.ofSeconds(60)).until(() -> s.state().fenced());
        // sent while the coordinator is cut off, acknowledgements awaited after the reconnect: a
        // partition the cut-off broker leads takes no write until then (it cannot reach its
        // followers), and Kafka's producer, told REQUEST_TIMED_OUT by that broker after each 30 s
        // request timeout, retries it there without asking for new metadata
        sent = fx.send(messages(topic, perKey / 2, perKey));
      } finally {
        cluster.reconnect(coordinator);
      }
      for (Future<RecordMetadata> f : sent) {
        f.get();
      }
      int total = KEYS * perKey;
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> fx.distinctEffects(sub.name()) == total && s.inFlight() == 0);
      assertThat(fx.effects(sub.name())).as("one effect per message").isEqualTo(total);
      List<Long> expected = LongStream.range(0, perKey).boxed().toList();
      fx.effectOrder(sub.name())
          .forEach((key, seqs) -> assertThat(seqs).as("effects of %s", key).isEqualTo(expected));
    }
  }

  /**
   * A partition leader cut off from the other brokers, its clients still reaching it, goes on
   * answering them as the leader: the relay's sends get REQUEST_TIMED_OUT after 30 s (it cannot
   * reach its followers) and the subscriber's fetches nothing, while another broker leads the
   * partition 3 s after the cut. Kafka's clients retry such a leader without new metadata until
   * their {@code metadata.max.age.ms} (Kafka's default: 5 minutes). With Postbox's 10 s, the relay
   * publishes and the subscriber applies every message through the new leader while the old one is
   * still cut off; each message once, in key order.
   */
  @Test
  void aPartitionLeaderCutOffFromTheOtherBrokersHoldsNeitherTheRelayNorTheSubscriber(
      PostboxTestContext ctx) throws Exception {
    assumeTrue(NO_NETWORKS.isEmpty(), "no broker cut off here: " + NO_NETWORKS.orElse(""));
    String topic = ClusterRelays.topic(cluster, "payments", 3);
    String group = "ledger-" + topic;
    Shop shop = new Shop(ctx.dataSource(), topic);
    Subscription sub = effectivelyOnce(group, topic);
    // a delivery timeout past the 150 s below: a relay stuck on the old leader cannot pass by
    // failing its batch and starting a new producer
    try (Effects fx = new Effects(ctx.dataSource(), cluster.bootstrapServers());
        Relay relay =
            ClusterRelays.start(
                ctx.dataSource(),
                cluster,
                Duration.ofSeconds(300),
                new ClusterRelays.Seen(Long.MAX_VALUE, n -> {}))) {
      start(
          KafkaSubscriber.builder(cluster.bootstrapServers(), sub)
              .inbox(PostgresInboxStore.create(ctx.dataSource()))
              .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d)));
      int perKey = 8;
      for (int i = 0; i < KEYS * perKey / 2; i++) {
        shop.orderAndRecord("k" + (i % KEYS));
      }
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> fx.distinctEffects(sub.name()) == KEYS * perKey / 2);
      // the leader of a partition, not the group's coordinator (a cut-off coordinator is the test
      // above's)
      int coordinator = cluster.coordinatorOf(group);
      int victim =
          IntStream.range(0, 3)
              .map(p -> cluster.leaderOf(topic, p).orElseThrow())
              .filter(leader -> leader != coordinator)
              .findFirst()
              .orElseThrow();
      cluster.cutOff(victim);
      long cut = System.nanoTime();
      try {
        for (int i = 0; i < KEYS * perKey / 2; i++) { // written while the old leader is cut off
          shop.orderAndRecord("k" + (i % KEYS));
        }
        await()
            .atMost(Duration.ofSeconds(150))
            .until(() -> fx.distinctEffects(sub.name()) == KEYS * perKey);
        assertThat(cluster.cutOffNodes()).containsExactly(victim);
        System.out.printf(
            "leader cut off: broker %d; every message applied %.1f s after the cut; relay %s%n",
            victim, (System.nanoTime() - cut) / 1e9, relay.stats());
      } finally {
        cluster.reconnect(victim);
      }
      assertThat(fx.effects(sub.name())).as("one effect per message").isEqualTo(KEYS * perKey);
      List<Long> expected = LongStream.rangeClosed(1, perKey).boxed().toList();
      fx.effectOrder(sub.name())
          .forEach((key, seqs) -> assertThat(seqs).as("effects of %s", key).isEqualTo(expected));
    }
  }

  /** An {@code EFFECTIVELY_ONCE} subscription of {@code topic} by {@code group}. */
  private static Subscription effectivelyOnce(String group, String topic) {
    return Subscription.builder(group)
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .build();
  }

  /** For every key, the messages with sequence numbers {@code from} (inclusive) to {@code to}. */
  private static List<Message> messages(String topic, int from, int to) {
    List<Message> ms = new ArrayList<>();
    for (int seq = from; seq < to; seq++) {
      for (int k = 0; k < KEYS; k++) {
        ms.add(Effects.message(topic, "k" + k, seq));
      }
    }
    return ms;
  }
}
