package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Recovery on a real RabbitMQ node: the broker closes the subscriber's connection (as {@code
 * rabbitmqctl close_connection} does) while a handler runs, after which the effect commits but the
 * ack cannot be sent; the client recovers the connection, the broker redelivers, and the inbox
 * suppresses the redelivery: every message applied once.
 */
@PostboxTest
class RabbitRecoveryIT {

  @Test
  void aRedeliveryAfterTheBrokerClosedTheConnectionIsSuppressedByTheInbox(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    assumeFalse(server.isExternal(), "closing a connection from the broker needs a private node");
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (var c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.execute("CREATE TABLE effect (message_id uuid NOT NULL)");
    }
    String topic = "drop-" + UUID.randomUUID();
    Subscription sub =
        Subscription.builder("drop-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .build();
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      messages.add(Message.builder(topic, "t").key("k" + (i % 5)).jsonPayload("{}").build());
    }
    UUID victim = messages.get(10).id();
    AtomicInteger closed = new AtomicInteger(-1);
    try (RabbitSubscriber s =
            RabbitSubscriber.builder(server.uri(), sub)
                .shards(1)
                .inbox(PostgresInboxStore.create(ds))
                .handler(d -> {
                  try (PreparedStatement ps =
                      d.connection()
                          .orElseThrow()
                          .prepareStatement("INSERT INTO effect (message_id) VALUES (?)")) {
                    ps.setObject(1, d.message().id());
                    ps.executeUpdate();
                  }
                  if (d.message().id().equals(victim) && closed.get() < 0) {
                    // the effect is in this transaction; the ack will have no channel to go on
                    closed.set(
                        server.closeConnections(
                            RabbitSubscriber.CONNECTION_NAME_PREFIX + sub.name()));
                  }
                })
                .build();
        RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      s.start();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() ->
              p.publish(messages).stream().allMatch(o -> o instanceof PublishOutcome.Acknowledged));
      await().atMost(Duration.ofSeconds(120)).until(() -> distinctEffects(ds) == 30);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().duplicatesSuppressed() >= 1 && s.inFlight() == 0);
      assertThat(closed.get()).as("connections the broker closed").isGreaterThanOrEqualTo(1);
      assertThat(effects(ds)).as("one effect per message").isEqualTo(30);
    }
  }

  private static long distinctEffects(DataSource ds) throws Exception {
    return query(ds, "SELECT count(DISTINCT message_id) FROM effect");
  }

  private static long effects(DataSource ds) throws Exception {
    return query(ds, "SELECT count(*) FROM effect");
  }

  private static long query(DataSource ds, String sql) throws Exception {
    try (var c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
