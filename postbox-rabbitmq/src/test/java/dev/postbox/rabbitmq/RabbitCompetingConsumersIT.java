package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code UNORDERED} subscriptions on a real RabbitMQ node consume their shard queues with competing
 * consumers (no single active consumer): two instances on one queue both get deliveries, proven by
 * a gate (each instance's handler waits until the other has received one, which it can only do if
 * the broker delivers to both while the first holds its prefetch), and every message is applied
 * once. A queue declared with single active consumer (an ordered subscription's, or one of an
 * earlier Postbox) is refused at start, naming it and the migration step.
 */
@PostboxTest
class RabbitCompetingConsumersIT {

  private static final int PREFETCH = 5;
  private static final int TOTAL = 60;

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void twoInstancesOfAnUnorderedSubscriptionBothGetDeliveriesAndApplyEachMessageOnce(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = unordered("compete", topic);
    CountDownLatch aReceived = new CountDownLatch(1);
    CountDownLatch bReceived = new CountDownLatch(1);
    // each holds its first deliveries until the other has one: with a single active consumer the
    // standby would never get one and the test would time out
    RabbitSubscriber a = start(server, ctx, sub, gated(sub, "a", aReceived, bReceived));
    RabbitSubscriber b = start(server, ctx, sub, gated(sub, "b", bReceived, aReceived));
    assertThat(consumerCount(server, RabbitTopology.queue(sub.name(), topic, 0))).isEqualTo(2);
    publish(server, topic);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub) >= TOTAL);
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> a.stats().applied() + b.stats().applied() == TOTAL);
    assertThat(a.stats().received()).as("instance a got deliveries").isPositive();
    assertThat(b.stats().received()).as("instance b got deliveries").isPositive();
    assertThat(a.stats().applied()).isPositive();
    assertThat(b.stats().applied()).isPositive();
    assertThat(effects(ds, sub)).as("every message applied once").isEqualTo(TOTAL);
    assertThat(distinctEffects(ds, sub)).isEqualTo(TOTAL);
  }

  @Test
  void anUnorderedSubscriptionOnAQueueWithSingleActiveConsumerIsRefusedNamingTheMigration(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = unordered("migrate", topic);
    String queue = RabbitTopology.queue(sub.name(), topic, 0);
    try (Connection c = connect(server)) {
      // what a key-ordered subscription, or an UNORDERED one of an earlier version, declared
      RabbitTopology.declareShards(c.createChannel(), sub.name(), topic, 1);
    }
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(1)
            .inbox(PostgresInboxStore.create(ctx.newDataSource(2)))
            .handler(d -> {})
            .build();
    open.add(s);
    assertThatThrownBy(s::start)
        .isInstanceOf(RabbitTopologyException.class)
        .hasMessageContaining("'" + queue + "'")
        .hasMessageContaining("single active consumer")
        .hasMessageContaining("rabbitmqctl delete_queue " + queue);
    assertThat(consumerCount(server, queue)).as("the old queue is left as it was").isZero();
    // and the other way round: a key-ordered subscription on a competing consumers' queue
    Subscription unorderedFirst = unordered("reverse", topic);
    try (Connection c = connect(server)) {
      RabbitTopology.declareShards(
          c.createChannel(), unorderedFirst.name(), topic, 1, RabbitTopology.Consumers.COMPETING);
    }
    Subscription ordered =
        Subscription.builder(unorderedFirst.name())
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .build();
    RabbitSubscriber o =
        RabbitSubscriber.builder(server.uri(), ordered)
            .shards(1)
            .inbox(PostgresInboxStore.create(ctx.newDataSource(2)))
            .handler(d -> {})
            .build();
    open.add(o);
    assertThatThrownBy(o::start)
        .isInstanceOf(RabbitTopologyException.class)
        .hasMessageContaining("without single active consumer");
  }

  @Test
  void shardLeasesAreNotUsedByAnUnorderedSubscription(PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = unordered("leases", topic);
    List<RabbitSubscriber> both = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      RabbitSubscriber s =
          RabbitSubscriber.builder(server.uri(), sub)
              .shards(3)
              .inbox(PostgresInboxStore.create(ctx.newDataSource(2)))
              .shardLeases(PostgresShardLeaseStore.create(ctx.newDataSource(2)))
              .handler(d -> {})
              .build();
      s.start();
      open.add(s);
      both.add(s);
    }
    for (RabbitSubscriber s : both) {
      assertThat(s.heldShards()).containsExactly(0, 1, 2);
    }
    for (int shard = 0; shard < 3; shard++) {
      assertThat(consumerCount(server, RabbitTopology.queue(sub.name(), topic, shard)))
          .isEqualTo(2);
    }
  }

  /** Counts {@code mine} down, then waits for {@code other} before it applies. */
  private static MessageHandler gated(
      Subscription sub, String by, CountDownLatch mine, CountDownLatch other) {
    return d -> {
      mine.countDown();
      other.await();
      try (PreparedStatement ps =
          d.connection()
              .orElseThrow()
              .prepareStatement(
                  "INSERT INTO effect (consumer, message_id, applied_by) VALUES (?, ?, ?)")) {
        ps.setString(1, sub.name());
        ps.setObject(2, d.message().id());
        ps.setString(3, by);
        ps.executeUpdate();
      }
    };
  }

  private RabbitSubscriber start(
      RabbitMqServer server, PostboxTestContext ctx, Subscription sub, MessageHandler handler) {
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(1) // one queue: the two instances compete on it
            .prefetch(PREFETCH)
            .inbox(PostgresInboxStore.create(ctx.newDataSource(PREFETCH + 2)))
            .handler(handler)
            .build();
    s.start();
    open.add(s);
    return s;
  }

  private static Connection connect(RabbitMqServer server) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    return f.newConnection();
  }

  private static int consumerCount(RabbitMqServer server, String queue) throws Exception {
    try (Connection c = connect(server);
        Channel ch = c.createChannel()) {
      return ch.queueDeclarePassive(queue).getConsumerCount();
    }
  }

  private static void publish(RabbitMqServer server, String topic) throws InterruptedException {
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < TOTAL; i++) {
      ms.add(
          Message.builder(topic, "order.created")
              .key("key-" + (i % 7))
              .jsonPayload("{\"n\":" + i + "}")
              .build());
    }
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      assertThat(p.publish(ms)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }

  private static Subscription unordered(String name, String topic) {
    return Subscription.builder(name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .ordering(Ordering.UNORDERED)
        .concurrency(PREFETCH)
        .build();
  }

  private static DataSource prepare(PostboxTestContext ctx) throws SQLException {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (var c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
              + " message_id uuid NOT NULL, applied_by text)");
    }
    return ds;
  }

  private static long effects(DataSource ds, Subscription sub) throws SQLException {
    return count(ds, sub, "SELECT count(*) FROM effect WHERE consumer = ?");
  }

  private static long distinctEffects(DataSource ds, Subscription sub) throws SQLException {
    return count(ds, sub, "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?");
  }

  private static long count(DataSource ds, Subscription sub, String sql) throws SQLException {
    try (var c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, sub.name());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
