package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresShardLeaseStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Instances of a key-ordered subscription sharing its shards through leases in PostgreSQL, on a
 * real RabbitMQ node: 3 instances of 12 shards consume 4 each (each shard queue with one consumer);
 * an instance that joins gets its share handed over while the others' deliveries are in flight; an
 * instance that leaves hands its shards to the others. Each time every message applied once, in key
 * order. The hand-overs are gated by latches, not timing.
 */
@PostboxTest
class RabbitShardLeasesIT {

  private static final int SHARDS = 12;
  private static final Duration TTL = Duration.ofSeconds(8);
  private static final int KEYS_PER_SHARD = 3;
  private static final int PER_KEY = 20;
  private static final int TOTAL = SHARDS * KEYS_PER_SHARD * PER_KEY;

  /** Deliveries an instance applies before its handler waits for the test's latch. */
  private static final int GATE = 20;

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void threeInstancesOfTwelveShardsConsumeFourEachAndEachShardQueueHasOneConsumer(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("share", topic);
    List<RabbitSubscriber> all = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      all.add(start(server, ctx, sub, d -> apply(d, sub)));
    }
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(all, 4));
    Set<Integer> union = new TreeSet<>();
    for (RabbitSubscriber s : all) {
      assertThat(s.heldShards()).hasSize(4);
      union.addAll(s.heldShards());
    }
    assertThat(union).as("every shard held by one instance").hasSize(SHARDS);
    assertThat(consumers(server, sub, topic))
        .as("consumers of each shard queue, from the broker")
        .containsOnly(1);
    publish(server, topic);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub) >= TOTAL);
    for (RabbitSubscriber s : all) {
      assertThat(s.stats().received()).as("every instance worked").isPositive();
    }
    assertAppliedOnceInKeyOrder(ds, sub);
  }

  @Test
  void anInstanceThatJoinsGetsItsShareHandedOverInKeyOrderWhileDeliveriesAreInFlight(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("join", topic);
    CountDownLatch joined = new CountDownLatch(1);
    AtomicInteger appliedByA = new AtomicInteger();
    AtomicInteger appliedByB = new AtomicInteger();
    RabbitSubscriber a = start(server, ctx, sub, gated(sub, appliedByA, joined));
    RabbitSubscriber b = start(server, ctx, sub, gated(sub, appliedByB, joined));
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a, b), 6));
    publish(server, topic);
    // both hold deliveries they cannot finish, and every other message of their shards unacked
    // behind them (a shard's messages fit its prefetch), so each shard has deliveries in flight
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() ->
            appliedByA.get() >= GATE
                && appliedByB.get() >= GATE
                && a.stats().received() + b.stats().received() == TOTAL);
    RabbitSubscriber c = start(server, ctx, sub, d -> apply(d, sub));
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> a.shardsHandingOver().size() == 2 && b.shardsHandingOver().size() == 2);
    assertThat(c.heldShards())
        .as("nothing taken while the holders' deliveries of the shards are running")
        .isEmpty();
    joined.countDown(); // the running ones finish; the rest goes back to the queues in order
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a, b, c), 4));
    assertThat(consumers(server, sub, topic)).containsOnly(1);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub) >= TOTAL);
    assertThat(c.stats().received()).as("the joiner worked").isPositive();
    assertThat(appliedByA.get() + appliedByB.get()).isLessThan(TOTAL);
    assertAppliedOnceInKeyOrder(ds, sub);
  }

  @Test
  void anInstanceThatLeavesHandsItsShardsToTheOthersInKeyOrder(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("leave", topic);
    CountDownLatch closing = new CountDownLatch(1);
    AtomicInteger appliedByA = new AtomicInteger();
    RabbitSubscriber a = start(server, ctx, sub, gated(sub, appliedByA, closing));
    RabbitSubscriber b = start(server, ctx, sub, d -> apply(d, sub));
    RabbitSubscriber c = start(server, ctx, sub, d -> apply(d, sub));
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a, b, c), 4));
    publish(server, topic);
    await().atMost(Duration.ofSeconds(60)).until(() -> appliedByA.get() >= GATE);
    Thread closer = Thread.ofPlatform().name("close-a").start(a::close);
    await().atMost(Duration.ofSeconds(30)).until(() -> !a.connected());
    closing.countDown(); // the held deliveries finish; the ones not started go back to the queue
    closer.join(Duration.ofSeconds(60));
    assertThat(closer.isAlive()).as("close of the leaving instance returned").isFalse();
    assertThat(a.heldShards()).isEmpty();
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(b, c), 6));
    assertThat(consumers(server, sub, topic)).containsOnly(1);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub) >= TOTAL);
    assertThat(appliedByA.get())
        .as("the leaving one stopped short of its shards")
        .isLessThan(TOTAL);
    assertAppliedOnceInKeyOrder(ds, sub);
  }

  @Test
  void anInstanceCutOffFromTheDatabaseLosesItsLeasesButStaysTheOnlyActiveConsumerOfItsShards(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("cut-off", topic);
    CutOff leases = new CutOff(PostgresShardLeaseStore.create(ctx.newDataSource(2)));
    RabbitSubscriber a = start(server, ctx, sub, leases, d -> apply(d, sub, "a"));
    RabbitSubscriber b = start(server, ctx, sub, d -> apply(d, sub, "b"));
    RabbitSubscriber c = start(server, ctx, sub, d -> apply(d, sub, "c"));
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a, b, c), 4));
    Set<Integer> aShards = a.heldShards();

    leases.down = true; // a renews nothing: its leases expire, the others take its shards
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(b, c), 6));
    assertThat(a.heldShards()).as("a does not know").isEqualTo(aShards);
    publish(server, topic);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub) >= TOTAL);
    assertThat(appliedBy(ds, sub, topic, aShards))
        .as("the broker kept a active on its shards while the leases said otherwise")
        .containsOnly("a");

    leases.down = false; // a sees its shards taken, hands them over, and gets its share back
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a, b, c), 4));
    assertThat(consumers(server, sub, topic)).containsOnly(1);
    assertAppliedOnceInKeyOrder(ds, sub);
  }

  /**
   * A shard given up while the connection is down (the instance was frozen past its lease and its
   * heartbeat, and came back) must not be consumed again when the connection recovers: the client's
   * automatic recovery re-creates every channel and consumer it recorded, and a consumer of a
   * handed-over shard starts no delivery; once it was the active consumer of its queue (single
   * active consumer) it held up to the prefetch unacked forever and the queue stalled (found by
   * {@code ./postbox verify --transport rabbitmq --consumer-mode shard-leases}).
   */
  @Test
  void aShardGivenUpWhileTheConnectionIsDownIsNotConsumedAgainAfterItsRecovery(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("recovered", topic);
    CutOff leases = new CutOff(PostgresShardLeaseStore.create(ctx.newDataSource(2)));
    RabbitSubscriber a =
        start(
            server,
            ctx,
            sub,
            leases,
            d -> apply(d, sub, "a"),
            // the connection stays down long enough for a to give its shards up meanwhile
            b -> b.recoveryInterval(Duration.ofSeconds(60)));
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a), SHARDS));

    assertThat(server.closeConnections(RabbitSubscriber.CONNECTION_NAME_PREFIX + sub.name()))
        .isEqualTo(1);
    leases.down = true; // a renews nothing while it is away: its leases expire
    RabbitSubscriber b = start(server, ctx, sub, d -> apply(d, sub, "b"));
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(b), SHARDS));
    leases.down = false; // a sees every shard taken and gives them up, its connection still down
    await().atMost(Duration.ofSeconds(30)).until(() -> a.heldShards().isEmpty());
    assertThat(a.connected()).as("a gave its shards up before its connection recovered").isFalse();

    await().atMost(Duration.ofSeconds(120)).until(a::connected);
    await().atMost(Duration.ofSeconds(60)).until(() -> settled(List.of(a, b), SHARDS / 2));
    assertThat(consumers(server, sub, topic))
        .as("one consumer per shard queue: no recovered consumer of a given-up shard")
        .containsOnly(1);
    publish(server, topic);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub) >= TOTAL);
    assertAppliedOnceInKeyOrder(ds, sub);
  }

  /** A lease store that fails while {@link #down}, as one cut off from its database. */
  private static final class CutOff implements ShardLeaseStore {
    private final ShardLeaseStore store;
    volatile boolean down;

    CutOff(ShardLeaseStore store) {
      this.store = store;
    }

    private void check() {
      if (down) {
        throw new IllegalStateException("database unreachable");
      }
    }

    @Override
    public Group heartbeat(String group, String member, Duration ttl) {
      check();
      return store.heartbeat(group, member, ttl);
    }

    @Override
    public Set<Integer> acquire(
        String group, String member, Collection<Integer> shards, Duration ttl) {
      check();
      return store.acquire(group, member, shards, ttl);
    }

    @Override
    public void release(String group, String member, Collection<Integer> shards) {
      check();
      store.release(group, member, shards);
    }

    @Override
    public void unregister(String group, String member) {
      check();
      store.unregister(group, member);
    }
  }

  /** Who applied the messages of {@code shards}. */
  private static Set<String> appliedBy(
      DataSource ds, Subscription sub, String topic, Set<Integer> shards) throws SQLException {
    Set<String> by = new TreeSet<>();
    try (var c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT msg_key, applied_by FROM effect WHERE consumer = ?")) {
      ps.setString(1, sub.name());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (shards.contains(
              RabbitTopology.shardOf(RabbitTopology.slot(rs.getString(1)), SHARDS))) {
            by.add(rs.getString(2));
          }
        }
      }
    }
    return by;
  }

  /** Whether each instance holds {@code each} shards, together all of them, none handing over. */
  private static boolean settled(List<RabbitSubscriber> all, int each) {
    Set<Integer> union = new TreeSet<>();
    for (RabbitSubscriber s : all) {
      if (s.heldShards().size() != each || !s.shardsHandingOver().isEmpty()) {
        return false;
      }
      union.addAll(s.heldShards());
    }
    return union.size() == SHARDS;
  }

  /** Applies {@link #GATE} deliveries, then each of its workers waits for {@code gate}. */
  private static MessageHandler gated(
      Subscription sub, AtomicInteger applied, CountDownLatch gate) {
    return d -> {
      if (applied.get() >= GATE) {
        gate.await();
      }
      apply(d, sub);
      applied.incrementAndGet();
    };
  }

  private RabbitSubscriber start(
      RabbitMqServer server, PostboxTestContext ctx, Subscription sub, MessageHandler handler) {
    return start(server, ctx, sub, PostgresShardLeaseStore.create(ctx.newDataSource(2)), handler);
  }

  private RabbitSubscriber start(
      RabbitMqServer server,
      PostboxTestContext ctx,
      Subscription sub,
      ShardLeaseStore leases,
      MessageHandler handler) {
    return start(server, ctx, sub, leases, handler, b -> {});
  }

  private RabbitSubscriber start(
      RabbitMqServer server,
      PostboxTestContext ctx,
      Subscription sub,
      ShardLeaseStore leases,
      MessageHandler handler,
      java.util.function.Consumer<RabbitSubscriber.Builder> more) {
    RabbitSubscriber.Builder builder =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(SHARDS)
            .inbox(PostgresInboxStore.create(ctx.newDataSource(12)))
            .shardLeases(leases)
            .shardLeaseTtl(TTL)
            .handler(handler);
    more.accept(builder);
    RabbitSubscriber s = builder.build();
    s.start();
    open.add(s);
    return s;
  }

  /** The consumer count of each shard queue, as the broker reports it. */
  private static List<Integer> consumers(RabbitMqServer server, Subscription sub, String topic)
      throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    List<Integer> counts = new ArrayList<>();
    try (Connection c = f.newConnection();
        Channel ch = c.createChannel()) {
      for (int shard = 0; shard < SHARDS; shard++) {
        counts.add(
            ch.queueDeclarePassive(RabbitTopology.queue(sub.name(), topic, shard))
                .getConsumerCount());
      }
    }
    return counts;
  }

  /** {@link #PER_KEY} messages for each of {@link #KEYS_PER_SHARD} keys of every shard. */
  private static void publish(RabbitMqServer server, String topic) throws InterruptedException {
    List<String> keys = new ArrayList<>();
    for (int shard = 0; shard < SHARDS; shard++) {
      int s = shard;
      IntStream.iterate(0, i -> i + 1)
          .mapToObj(i -> "key-" + i)
          .filter(k -> RabbitTopology.shardOf(RabbitTopology.slot(k), SHARDS) == s)
          .limit(KEYS_PER_SHARD)
          .forEach(keys::add);
    }
    List<Message> ms = new ArrayList<>();
    for (int seq = 0; seq < PER_KEY; seq++) {
      for (String key : keys) {
        ms.add(message(topic, key, seq));
      }
    }
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      for (int i = 0; i < ms.size(); i += 60) {
        assertThat(p.publish(ms.subList(i, Math.min(ms.size(), i + 60))))
            .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      }
    }
  }

  private static void assertAppliedOnceInKeyOrder(DataSource ds, Subscription sub)
      throws SQLException {
    assertThat(effects(ds, sub)).as("every message applied once").isEqualTo(TOTAL);
    Map<String, List<Long>> order = new HashMap<>();
    try (var c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT msg_key, seq FROM effect WHERE consumer = ? ORDER BY n")) {
      ps.setString(1, sub.name());
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          order.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(2));
        }
      }
    }
    assertThat(order).hasSize(SHARDS * KEYS_PER_SHARD);
    order.forEach((key, seqs) -> assertThat(seqs).as("order of " + key).isSorted());
  }

  private static Subscription subscription(String name, String topic) {
    return Subscription.builder(name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .ordering(Ordering.KEY)
        .concurrency(8)
        .build();
  }

  private static Message message(String topic, String key, int seq) {
    return Message.builder(topic, "order.created")
        .key(key)
        .header("seq", Integer.toString(seq))
        .jsonPayload("{\"seq\":" + seq + "}")
        .build();
  }

  private static DataSource prepare(PostboxTestContext ctx) throws SQLException {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (var c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
              + " message_id uuid NOT NULL, msg_key text, seq bigint, applied_by text)");
    }
    return ds;
  }

  private static void apply(Delivery d, Subscription sub) throws SQLException {
    apply(d, sub, "");
  }

  private static void apply(Delivery d, Subscription sub, String by) throws SQLException {
    try (PreparedStatement ps =
        d.connection()
            .orElseThrow()
            .prepareStatement(
                "INSERT INTO effect (consumer, message_id, msg_key, seq, applied_by)"
                    + " VALUES (?, ?, ?, ?, ?)")) {
      ps.setString(1, sub.name());
      ps.setObject(2, d.message().id());
      ps.setString(3, d.message().key().orElse(null));
      ps.setLong(4, Long.parseLong(d.message().header("seq").orElse("0")));
      ps.setString(5, by);
      ps.executeUpdate();
    }
  }

  private static long effects(DataSource ds, Subscription sub) throws SQLException {
    try (var c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM effect WHERE consumer = ?")) {
      ps.setString(1, sub.name());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
