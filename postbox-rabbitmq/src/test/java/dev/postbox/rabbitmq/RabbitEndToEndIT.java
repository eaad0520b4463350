package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.MessageProperties;
import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.jdbc.cdc.EmitMessageOutbox;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Outbox -> polling relay -> RabbitMQ -> RabbitSubscriber -> PostgreSQL inbox -> effect, against
 * the test kit's private RabbitMQ node and embedded PostgreSQL: nothing lost, no duplicate effect,
 * per-key order; also with the broker killed with kill -9 and restarted mid-stream (every quorum
 * queue, even one created just before the kill, has a leader again after the restart); and the CDC
 * relay in place of the polling one, on outbox rows and emitted logical messages. (The jdbc stores
 * are a test-scope dependency: the adapters never depend on each other.)
 */
@PostboxTest
class RabbitEndToEndIT {

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void everyMessageIsAppliedOnceInKeyOrder(PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("inventory", topic);
    subscriber(server, ds, sub);
    write(ds, topic, 0, 400, 20);
    relay(server, ds);
    awaitEffects(ds, sub.name(), 400);
    assertNoDuplicateAndKeyOrder(ds, sub.name(), 400);
  }

  @Test
  void brokerKilledAndRestartedMidStreamLosesAndDoublesNothing(PostboxTestContext ctx)
      throws Exception {
    org.junit.jupiter.api.Assumptions.assumeFalse(
        RabbitMqServer.sharedOrSkip().isExternal(), "needs a private node to kill");
    // a node of its own: killing the shared one would disturb other tests, and a fresh node
    // recovers only this test's queues
    RabbitMqServer server = RabbitMqServer.startPrivate(RabbitMqServer.findScript().orElseThrow());
    open.add(server);
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("shipping", topic);
    subscriber(server, ds, sub);
    relay(server, ds);
    write(ds, topic, 0, 300, 15);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub.name()) >= 50);
    // the worst case for the node's recovery: quorum queues created right before the kill
    List<String> fresh = declareFreshQuorumQueues(server, 6);
    server.kill();
    write(ds, topic, 300, 300, 15); // written while the broker is down
    server.start();
    assertEachConfirmsAPublish(server, fresh);
    awaitEffects(ds, sub.name(), 600);
    assertNoDuplicateAndKeyOrder(ds, sub.name(), 600);
  }

  /**
   * The CDC relay (issue 15) with the RabbitMQ relay publisher: outbox rows and emitted logical
   * messages go out in commit order through the slot, also across a relay restart.
   */
  @Test
  void theCdcRelayPublishesRowsAndEmittedMessagesOnceInKeyOrderAcrossARestart(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    Subscription sub = subscription("billing", topic);
    subscriber(server, ds, sub);
    CdcRelay first = cdcRelay(server, ds, ctx.jdbcUrl());
    try {
      write(ds, topic, 0, 200, 15); // outbox rows
      await().atMost(Duration.ofSeconds(60)).until(() -> effects(ds, sub.name()) >= 50);
      first.close(); // its unconfirmed tail is published again by the next one
      CdcRelay second = cdcRelay(server, ds, ctx.jdbcUrl());
      try {
        emit(ds, topic, 200, 200, 15); // logical messages, no row
        awaitEffects(ds, sub.name(), 400);
        assertNoDuplicateAndKeyOrder(ds, sub.name(), 400);
        assertThat(first.stats().published() + second.stats().published())
            .as("every event went out through the RabbitMQ publisher")
            .isGreaterThanOrEqualTo(400);
      } finally {
        second.close();
      }
    } finally {
      first.close();
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                + " WHERE slot_name = '"
                + first.slotName()
                + "'");
        s.execute("DROP PUBLICATION IF EXISTS " + first.publicationName());
      }
    }
  }

  private static CdcRelay cdcRelay(RabbitMqServer server, DataSource ds, String jdbcUrl) {
    CdcRelay r =
        CdcRelay.builder(
                ds,
                jdbcUrl,
                RabbitRelayPublisher.builder(server.uri())
                    .confirmTimeout(Duration.ofSeconds(10))
                    .build())
            .instanceId("cdc-" + UUID.randomUUID())
            .batchSize(50)
            .logicalMessages(true)
            .standbyRetryInterval(Duration.ofMillis(100))
            .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2, 0.5))
            .build();
    r.start();
    await().atMost(Duration.ofSeconds(120)).until(r::active);
    return r;
  }

  /** As {@link #write}, but each message a logical message ({@link EmitMessageOutbox}). */
  private static void emit(DataSource ds, String topic, int from, int count, int keys) {
    EmitMessageOutbox outbox = EmitMessageOutbox.create();
    for (int i = from; i < from + count; i += 10) {
      int start = i;
      outbox.inTransaction(
          ds,
          tx -> {
            for (int j = start; j < Math.min(start + 10, from + count); j++) {
              tx.write(
                  Message.builder(topic, "order.created")
                      .key("k" + (j % keys))
                      .header("seq", Integer.toString(j))
                      .jsonPayload("{\"seq\":" + j + "}")
                      .build());
            }
            return null;
          });
    }
  }

  /** Declares {@code n} quorum queues, each holding one confirmed message; returns their names. */
  private static List<String> declareFreshQuorumQueues(RabbitMqServer server, int n)
      throws Exception {
    List<String> names = new ArrayList<>();
    try (com.rabbitmq.client.Connection c = connect(server);
        Channel ch = c.createChannel()) {
      ch.confirmSelect();
      for (int i = 0; i < n; i++) {
        String q = "fresh-" + UUID.randomUUID();
        ch.queueDeclare(q, true, false, false, Map.of("x-queue-type", "quorum"));
        ch.basicPublish("", q, MessageProperties.PERSISTENT_BASIC, new byte[] {1});
        names.add(q);
      }
      ch.waitForConfirmsOrDie(30_000);
    }
    return names;
  }

  /**
   * After the restart, each queue takes and confirms a publish: it has a leader (the test kit's
   * {@code start()} makes sure of it; RabbitMQ 3.10 left some of them leaderless for good).
   */
  private static void assertEachConfirmsAPublish(RabbitMqServer server, List<String> queues)
      throws Exception {
    try (com.rabbitmq.client.Connection c = connect(server);
        Channel ch = c.createChannel()) {
      ch.confirmSelect();
      for (String q : queues) {
        ch.basicPublish("", q, true, MessageProperties.PERSISTENT_BASIC, new byte[] {2});
      }
      assertThat(ch.waitForConfirms(30_000)).as("every fresh quorum queue confirmed").isTrue();
    }
  }

  private static com.rabbitmq.client.Connection connect(RabbitMqServer server) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    return f.newConnection("e2e-test");
  }

  private static Subscription subscription(String name, String topic) {
    return Subscription.builder(name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .ordering(Ordering.KEY)
        .build();
  }

  /** Migrates the test's schema and creates the {@code effect} table (shared with other ITs). */
  static DataSource prepare(PostboxTestContext ctx) throws SQLException {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
              + " message_id uuid NOT NULL, msg_key text, seq bigint)");
    }
    return ds;
  }

  private void subscriber(RabbitMqServer server, DataSource ds, Subscription sub) {
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .inbox(PostgresInboxStore.create(ds))
            .shards(3)
            .handler(d -> apply(d.connection().orElseThrow(), sub.name(), d))
            .build();
    s.start();
    open.add(s);
  }

  private void relay(RabbitMqServer server, DataSource ds) {
    open.add(startRelay(server, ds));
  }

  /** A started polling relay with the RabbitMQ publisher, for {@code ds}'s outbox. */
  static Relay startRelay(RabbitMqServer server, DataSource ds) {
    Relay r =
        Relay.builder(
                PostgresRelayStore.create(ds),
                RabbitRelayPublisher.builder(server.uri())
                    .confirmTimeout(Duration.ofSeconds(10))
                    .build())
            .instanceId("relay-" + UUID.randomUUID())
            .batchSize(50)
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(200))
            .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2, 0.5))
            .build();
    r.start();
    return r;
  }

  /** Writes {@code count} messages from {@code from}, over {@code keys} keys, 10 per commit. */
  static void write(DataSource ds, String topic, int from, int count, int keys) {
    Outbox outbox = Outbox.postgres();
    for (int i = from; i < from + count; i += 10) {
      int start = i;
      outbox.inTransaction(
          ds,
          tx -> {
            for (int j = start; j < Math.min(start + 10, from + count); j++) {
              tx.write(
                  Message.builder(topic, "order.created")
                      .key("k" + (j % keys))
                      .header("seq", Integer.toString(j))
                      .jsonPayload("{\"seq\":" + j + "}")
                      .build());
            }
            return null;
          });
    }
  }

  /** Records the effect of {@code d} for {@code consumer} in the {@code effect} table. */
  static void apply(Connection c, String consumer, Delivery d) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO effect (consumer, message_id, msg_key, seq) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, consumer);
      ps.setObject(2, d.message().id());
      ps.setString(3, d.message().key().orElse(null));
      ps.setLong(4, Long.parseLong(d.message().header("seq").orElse("0")));
      ps.executeUpdate();
    }
  }

  private static long count(DataSource ds, String sql, String consumer) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long effects(DataSource ds, String consumer) throws SQLException {
    return count(ds, "SELECT count(*) FROM effect WHERE consumer = ?", consumer);
  }

  static void awaitEffects(DataSource ds, String consumer, long n) {
    await()
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(250))
        .until(() ->
            count(ds, "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?", consumer)
                >= n);
  }

  static void assertNoDuplicateAndKeyOrder(DataSource ds, String consumer, long n)
      throws SQLException {
    assertThat(effects(ds, consumer)).as("one effect per message").isEqualTo(n);
    Map<String, List<Long>> order = new HashMap<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT msg_key, seq FROM effect WHERE consumer = ? ORDER BY n")) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          order.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(2));
        }
      }
    }
    order.forEach((key, seqs) -> assertThat(seqs).as("order of " + key).isSorted());
  }
}
