package dev.postbox.rabbitmq;

import static dev.postbox.rabbitmq.RabbitEndToEndIT.assertNoDuplicateAndKeyOrder;
import static dev.postbox.rabbitmq.RabbitEndToEndIT.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitCluster;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Outbox -> polling relay -> three-node RabbitMQ cluster (the test kit's {@link RabbitCluster}) ->
 * RabbitSubscriber -> PostgreSQL inbox -> effect, with one node killed with {@code kill -9}
 * mid-stream, from inside the 100th delivery's inbox transaction (600 rows written before, 300
 * while the node is down): the node holding the quorum leaders of the subscription's shard queues,
 * the node the subscriber is connected to, or the node the relay is connected to. The clients know
 * every node ({@code addresses}). The shard queues are declared first through node 2, so their
 * leaders start there, while the subscriber connects to node 0 and the relay to node 1: each kill
 * hits one role only. Checked as {@link RabbitEndToEndIT} does: one effect per message, every key's
 * effects in order; and the killed node rejoins the cluster.
 *
 * <p>The three tests share one cluster (starting one takes 15-30 s): each starts with every node
 * running in the cluster (checked; a node a failed test left down is started again first), restarts
 * the node it killed, and has its own topic, subscription (so its own shard queues and subscriber
 * connection name) and relay connection name.
 */
@PostboxTest
class RabbitClusterIT {

  private static final Logger LOG = LoggerFactory.getLogger(RabbitClusterIT.class);
  private static final int SHARDS = 3;
  private static final int LEADERS = 2;
  private static final int SUBSCRIBER = 0;
  private static final int RELAY = 1;
  private static final int KILL_AT = 100;

  private static RabbitCluster cluster;

  private final List<AutoCloseable> open = new ArrayList<>();
  private final List<RabbitSubscriber> subscribers = new ArrayList<>();

  @BeforeAll
  static void startCluster() {
    cluster = RabbitCluster.builderOrSkip().build();
    cluster.start();
  }

  @AfterAll
  static void closeCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @BeforeEach
  void everyNodeRunsInTheCluster() {
    cluster.heal();
    assertThat(cluster.runningNodes())
        .as("nodes running in the cluster")
        .isEqualTo(Set.of(0, 1, 2));
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void theNodeHoldingTheShardQueuesLeadersKilledMidStreamLosesAndDoublesNothing(
      PostboxTestContext ctx) throws Exception {
    DataSource ds = RabbitEndToEndIT.prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("leader", topic);
    List<String> queues = declareShardsOn(LEADERS, sub, topic);
    for (String q : queues) {
      assertThat(cluster.leaderOf(q)).as("leader of " + q).hasValue(LEADERS);
      assertThat(cluster.membersOf(q)).as("members of " + q).isEqualTo(Set.of(0, 1, 2));
    }
    CountDownLatch killed = subscriber(ds, sub, LEADERS);
    relay(ds, sub);
    write(ds, topic, 0, 600, 30);
    awaitKill(killed);
    write(ds, topic, 600, 300, 30); // written while the node is down
    for (String q : queues) {
      await().atMost(Duration.ofMinutes(2)).until(() -> cluster.leaderOf(q).isPresent());
      int leader = cluster.leaderOf(q).getAsInt();
      assertThat(leader).as("new leader of " + q).isNotEqualTo(LEADERS);
      LOG.info("new leader of {}: node {}", q, leader);
    }
    awaitDistinctEffects(ds, sub.name(), 900);
    assertNoDuplicateAndKeyOrder(ds, sub.name(), 900);
    LOG.info("after the leaders' node was killed: {}", subscribers.get(0).stats());
    assertThat(cluster.nodesOfConnection(RabbitSubscriber.CONNECTION_NAME_PREFIX + sub.name()))
        .as("the subscriber stayed on its node")
        .containsExactly(SUBSCRIBER);

    cluster.start(LEADERS);
    assertThat(cluster.runningNodes()).isEqualTo(Set.of(0, 1, 2));
  }

  @Test
  void theSubscribersNodeKilledItReconnectsToAnotherNodeAndFinishes(PostboxTestContext ctx)
      throws Exception {
    DataSource ds = RabbitEndToEndIT.prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("follow", topic);
    declareShardsOn(LEADERS, sub, topic);
    String connection = RabbitSubscriber.CONNECTION_NAME_PREFIX + sub.name();
    CountDownLatch killed = subscriber(ds, sub, SUBSCRIBER);
    assertThat(cluster.nodesOfConnection(connection)).containsExactly(SUBSCRIBER);
    relay(ds, sub);
    write(ds, topic, 0, 600, 30);
    awaitKill(killed);
    write(ds, topic, 600, 300, 30); // written while the node is down
    awaitDistinctEffects(ds, sub.name(), 900);
    assertNoDuplicateAndKeyOrder(ds, sub.name(), 900);
    LOG.info("after the subscriber's node was killed: {}", subscribers.get(0).stats());
    assertThat(subscribers.get(0).stats().duplicatesSuppressed())
        .as("the delivery whose transaction was open at the kill came again; the inbox took it")
        .isGreaterThanOrEqualTo(1);
    assertThat(cluster.nodesOfConnection(connection))
        .as("the subscriber's connection after its node was killed")
        .hasSize(1)
        .doesNotContain(SUBSCRIBER);

    cluster.start(SUBSCRIBER);
    assertThat(cluster.runningNodes()).isEqualTo(Set.of(0, 1, 2));
  }

  @Test
  void theRelaysNodeKilledItPublishesThroughAnotherNode(PostboxTestContext ctx) throws Exception {
    DataSource ds = RabbitEndToEndIT.prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("publish", topic);
    declareShardsOn(LEADERS, sub, topic);
    CountDownLatch killed = subscriber(ds, sub, RELAY);
    String relayConnection = relay(ds, sub);
    write(ds, topic, 0, 600, 30);
    awaitKill(killed);
    write(ds, topic, 600, 300, 30); // published only through another node
    awaitDistinctEffects(ds, sub.name(), 900);
    assertNoDuplicateAndKeyOrder(ds, sub.name(), 900);
    LOG.info("after the relay's node was killed: {}", subscribers.get(0).stats());
    assertThat(cluster.nodesOfConnection(relayConnection))
        .as("the relay's connection after its node was killed")
        .hasSize(1)
        .doesNotContain(RELAY);

    cluster.start(RELAY);
    assertThat(cluster.runningNodes()).isEqualTo(Set.of(0, 1, 2));
  }

  /** The subscription's topology, declared through node {@code node}: its quorum leaders there. */
  private List<String> declareShardsOn(int node, Subscription sub, String topic) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(cluster.uri());
    try (Connection c =
            f.newConnection(List.of(Address.parseAddress(cluster.address(node))), "declarer");
        Channel ch = c.createChannel()) {
      return RabbitTopology.declareShards(ch, sub.name(), topic, SHARDS);
    }
  }

  /** The clients list every node, their own first. */
  private List<String> addressesFrom(int first) {
    List<String> all = new ArrayList<>();
    for (int i = 0; i < cluster.size(); i++) {
      all.add(cluster.address((first + i) % cluster.size()));
    }
    return all;
  }

  /**
   * An {@code EFFECTIVELY_ONCE} subscriber on every node, node 0 first, whose {@value #KILL_AT}th
   * delivery kills node {@code victim} ({@code kill -9}) inside its inbox transaction, before the
   * commit and the ack; the latch opens once the node is dead.
   */
  private CountDownLatch subscriber(DataSource ds, Subscription sub, int victim) {
    AtomicInteger handled = new AtomicInteger();
    CountDownLatch killed = new CountDownLatch(1);
    RabbitSubscriber s =
        RabbitSubscriber.builder(cluster.uri(), sub)
            .addresses(addressesFrom(SUBSCRIBER))
            .inbox(PostgresInboxStore.create(ds))
            .shards(SHARDS)
            .handler(d -> {
              RabbitEndToEndIT.apply(d.connection().orElseThrow(), sub.name(), d);
              if (handled.incrementAndGet() == KILL_AT) {
                cluster.kill(victim);
                killed.countDown();
              }
            })
            .build();
    s.start();
    open.add(s);
    subscribers.add(s);
    return killed;
  }

  private static void awaitKill(CountDownLatch killed) {
    await().atMost(Duration.ofMinutes(3)).until(() -> killed.getCount() == 0);
  }

  /** A relay publishing through node {@link #RELAY} first; its connection's name. */
  private String relay(DataSource ds, Subscription sub) {
    String connection = RabbitRelayPublisher.DEFAULT_CONNECTION_NAME + "-" + sub.name();
    Relay r =
        Relay.builder(
                PostgresRelayStore.create(ds),
                RabbitRelayPublisher.builder(cluster.uri())
                    .addresses(addressesFrom(RELAY))
                    .connectionName(connection)
                    .confirmTimeout(Duration.ofSeconds(10))
                    .build())
            .instanceId("relay-" + UUID.randomUUID())
            .batchSize(50)
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(200))
            .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2, 0.5))
            .build();
    r.start();
    open.add(r);
    return connection;
  }

  private static Subscription subscription(String name, String topic) {
    return Subscription.builder(name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .ordering(Ordering.KEY)
        .build();
  }

  private static void awaitDistinctEffects(DataSource ds, String consumer, long n) {
    await()
        .atMost(Duration.ofMinutes(5))
        .pollInterval(Duration.ofMillis(500))
        .until(() -> distinctEffects(ds, consumer) >= n);
  }

  private static long distinctEffects(DataSource ds, String consumer) throws Exception {
    try (java.sql.Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?")) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
