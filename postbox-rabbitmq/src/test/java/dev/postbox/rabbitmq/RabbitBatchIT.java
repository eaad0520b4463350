package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
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
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Batches on a real RabbitMQ node ({@code EFFECTIVELY_ONCE}, one transaction per batch): every
 * message applied once in fewer transactions than messages, in key order; a poison message
 * dead-lettered alone while its batch's neighbours are applied once; a batch whose effects
 * committed but whose acks were lost with the connection is redelivered and suppressed by the
 * inbox.
 */
@PostboxTest
class RabbitBatchIT {

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void aBatchAppliesEveryMessageOnceInKeyOrderInFewerTransactions(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "batch-" + UUID.randomUUID();
    Subscription sub = subscription("batch", topic, 50);
    AtomicInteger calls = new AtomicInteger();
    AtomicInteger largest = new AtomicInteger();
    List<Message> once = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      once.add(message(topic, "k" + (i % 12), i));
    }
    List<Message> twice = new ArrayList<>(once);
    twice.addAll(once); // the same ids again, as a relay would after a crash
    declare(server, ds, sub);
    publish(server, twice); // waiting before the subscriber starts: full batches
    RabbitSubscriber s =
        start(
            server,
            ds,
            sub,
            ds2 -> {
              calls.incrementAndGet();
              largest.accumulateAndGet(ds2.size(), Math::max);
              for (Delivery d : ds2) {
                apply(d, sub);
              }
            });
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> s.stats().received() == 600 && s.inFlight() == 0);
    assertThat(effects(ds, sub)).as("one effect per id").isEqualTo(300);
    assertThat(count(ds, "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?", sub))
        .isEqualTo(300);
    assertThat(s.stats().duplicatesSuppressed()).isEqualTo(300);
    long transactions = count(ds, "SELECT count(DISTINCT tx) FROM effect WHERE consumer = ?", sub);
    assertThat(transactions).as("transactions for 300 effects").isLessThan(300).isPositive();
    assertThat(largest.get()).as("largest batch").isGreaterThan(1).isLessThanOrEqualTo(50);
    assertThat(calls.get()).isLessThan(600);
    assertKeyOrder(ds, sub);
  }

  @Test
  void aPoisonMessageInABatchIsDeadLetteredAloneAndTheOthersAppliedOnce(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = prepare(ctx);
    String topic = "batch-poison-" + UUID.randomUUID();
    Subscription sub = subscription("poison", topic, 20);
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      ms.add(message(topic, "k" + (i % 4), i));
    }
    UUID poison = ms.get(17).id();
    AtomicInteger batchesWithPoison = new AtomicInteger();
    declare(server, ds, sub);
    publish(server, ms);
    RabbitSubscriber s =
        start(
            server,
            ds,
            sub,
            batch -> {
              for (Delivery d : batch) {
                if (d.message().id().equals(poison)) {
                  if (batch.size() > 1) {
                    batchesWithPoison.incrementAndGet();
                  }
                  throw new PermanentMessageException("poison " + d.message().id());
                }
                apply(d, sub);
              }
            });
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> s.stats().received() == 60 && s.inFlight() == 0);
    assertThat(effects(ds, sub)).as("every message but the poison, once").isEqualTo(59);
    assertThat(count(ds, "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?", sub))
        .isEqualTo(59);
    assertThat(
            count(
                ds,
                "SELECT count(*) FROM postbox_dead_letter WHERE consumer = ? AND message_id = '"
                    + poison
                    + "'",
                sub))
        .as("the poison dead-lettered")
        .isEqualTo(1);
    assertThat(count(ds, "SELECT count(*) FROM postbox_dead_letter WHERE consumer = ?", sub))
        .as("nothing else dead-lettered")
        .isEqualTo(1);
    assertThat(batchesWithPoison.get()).as("the poison arrived in a batch").isPositive();
    assertKeyOrder(ds, sub);
  }

  @Test
  void aBatchWhoseAcksWereLostWithTheConnectionIsAppliedOnce(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    assumeFalse(server.isExternal(), "closing a connection from the broker needs a private node");
    DataSource ds = prepare(ctx);
    String topic = "batch-drop-" + UUID.randomUUID();
    Subscription sub = subscription("drop", topic, 25);
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      ms.add(message(topic, "k" + (i % 5), i));
    }
    UUID victim = ms.get(30).id();
    AtomicInteger closed = new AtomicInteger(-1);
    declare(server, ds, sub);
    publish(server, ms);
    RabbitSubscriber s =
        start(
            server,
            ds,
            sub,
            batch -> {
              for (Delivery d : batch) {
                apply(d, sub);
              }
              boolean hit = batch.stream().anyMatch(d -> d.message().id().equals(victim));
              if (hit && closed.get() < 0) {
                // the batch's effects are in this transaction; its acks will have no channel
                closed.set(
                    server.closeConnections(RabbitSubscriber.CONNECTION_NAME_PREFIX + sub.name()));
              }
            });
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            count(ds, "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?", sub)
                == 100);
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> s.stats().duplicatesSuppressed() >= 1 && s.inFlight() == 0);
    assertThat(closed.get()).as("connections the broker closed").isGreaterThanOrEqualTo(1);
    assertThat(effects(ds, sub)).as("one effect per message").isEqualTo(100);
    assertKeyOrder(ds, sub);
  }

  private RabbitSubscriber start(
      RabbitMqServer server, DataSource ds, Subscription sub, BatchHandler handler) {
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(2)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .batchHandler(handler)
            .build();
    s.start();
    open.add(s);
    return s;
  }

  /** Declares the subscription's shard queues (a subscriber started and closed at once). */
  private static void declare(RabbitMqServer server, DataSource ds, Subscription sub) {
    try (RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(2)
            .inbox(PostgresInboxStore.create(ds))
            .batchHandler(b -> {
              throw new IllegalStateException("no message expected yet");
            })
            .build()) {
      s.start();
    }
  }

  private static void publish(RabbitMqServer server, List<Message> ms) {
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      for (int i = 0; i < ms.size(); i += 100) {
        List<Message> chunk = ms.subList(i, Math.min(ms.size(), i + 100));
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() ->
                p.publish(chunk).stream().allMatch(o -> o instanceof PublishOutcome.Acknowledged));
      }
    }
  }

  private static Subscription subscription(String name, String topic, int batchSize) {
    return Subscription.builder(name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .ordering(Ordering.KEY)
        .batchSize(batchSize)
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
              + " message_id uuid NOT NULL, msg_key text, seq bigint,"
              + " tx bigint NOT NULL DEFAULT txid_current())");
    }
    return ds;
  }

  private static void apply(Delivery d, Subscription sub) throws SQLException {
    try (PreparedStatement ps =
        d.connection()
            .orElseThrow()
            .prepareStatement(
                "INSERT INTO effect (consumer, message_id, msg_key, seq) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, sub.name());
      ps.setObject(2, d.message().id());
      ps.setString(3, d.message().key().orElse(null));
      ps.setLong(4, Long.parseLong(d.message().header("seq").orElse("0")));
      ps.executeUpdate();
    }
  }

  private static void assertKeyOrder(DataSource ds, Subscription sub) throws SQLException {
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
    assertThat(order).isNotEmpty();
    order.forEach((key, seqs) -> assertThat(seqs).as("order of " + key).isSorted());
  }

  private static long count(DataSource ds, String sql, Subscription sub) throws SQLException {
    try (var c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, sub.name());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long effects(DataSource ds, Subscription sub) throws SQLException {
    return count(ds, "SELECT count(*) FROM effect WHERE consumer = ?", sub);
  }
}
