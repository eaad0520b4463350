package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Durable requests on Kafka: the request is written through the outbox in the caller's transaction
 * (with the order row), the relay publishes it, a responder answers it; the requesting service's
 * reply subscription is closed (as by a crash) between the request and the reply, and after its
 * restart the reply is handled exactly once, even though the responder sends it twice.
 */
@PostboxTest
class DurableRequestIT extends Subscribers {

  @Test
  void aReplyThatComesBackWhileTheRequesterIsDownIsHandledOnceAfterItsRestart(
      PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders (id text PRIMARY KEY, authorised_charge bigint)");
      s.execute("CREATE TABLE charge (n bigserial PRIMARY KEY, request_id uuid NOT NULL)");
      s.execute("CREATE TABLE reply_handled (request_id uuid NOT NULL, charge bigint NOT NULL)");
    }
    String requests = ctx.topic("payments", 2);
    String replies = ctx.topic("payment-replies", 1);
    DurableRequests payments = KafkaRequester.durableRequests(replies);
    CountDownLatch answer = new CountDownLatch(1);

    // payments: a responder that waits until the test lets it answer
    Subscription paySub =
        Subscription.builder("payments-" + UUID.randomUUID())
            .topics(requests)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    try (KafkaResponder responder = KafkaResponder.builder(ctx.bootstrapServers()).build();
        Relay relay =
            Relay.builder(
                    PostgresRelayStore.create(ds),
                    KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
                .pollInterval(Duration.ofMillis(100))
                .build()) {
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), paySub)
              .inbox(PostgresInboxStore.create(ds))
              .deadLetters(PostgresDeadLetterStore.create(ds))
              .handler(
                  responder.handler(
                      paySub,
                      d -> {
                        answer.await();
                        try (PreparedStatement ps =
                            d.connection()
                                .orElseThrow()
                                .prepareStatement(
                                    "INSERT INTO charge (request_id) VALUES (?) RETURNING n")) {
                          ps.setObject(1, d.message().id());
                          try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            return Payload.json("{\"charge\":" + rs.getLong(1) + "}");
                          }
                        }
                      })));
      relay.start();

      // orders: the reply subscription (a normal durable subscription) runs, then "crashes"
      String group = "orders-replies-" + UUID.randomUUID();
      KafkaSubscriber orders = start(replySubscriber(ctx, ds, payments, replies, group));

      // the order and its request, in one transaction
      Message request =
          payments.request(
              Message.builder(requests, "charge.authorise")
                  .key("order-1")
                  .jsonPayload("{\"order\":\"order-1\"}")
                  .build());
      assertThat(request.header(RequestReplyHeaders.REPLY_TO)).contains(replies + ":0");
      assertThat(request.correlationId()).contains(request.id().toString());
      Outbox.postgres()
          .inTransaction(
              ds,
              tx -> {
                try (PreparedStatement ps =
                    tx.connection()
                        .prepareStatement("INSERT INTO orders (id) VALUES ('order-1')")) {
                  ps.executeUpdate();
                }
                tx.write(request);
                return null;
              });
      await().atMost(Duration.ofSeconds(60)).until(() -> relay.stats().published() >= 1);

      orders.close(); // the requesting service goes down before the reply
      subscribers.remove(orders);
      answer.countDown();
      await().atMost(Duration.ofSeconds(60)).until(() -> count(ds, "charge") == 1);
      // the request again (as a relay's republish after a crash): the same reply again
      try (Effects fx = new Effects(ds, ctx.bootstrapServers())) {
        fx.publishAll(java.util.List.of(request));
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> subscribers.getFirst().stats().duplicatesSuppressed() >= 1);
      assertThat(count(ds, "reply_handled")).as("nobody read the replies yet").isZero();

      // the restarted service (same subscription) handles the reply, once
      KafkaSubscriber restarted = start(replySubscriber(ctx, ds, payments, replies, group));
      await().atMost(Duration.ofSeconds(60)).until(() -> count(ds, "reply_handled") == 1);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> restarted.stats().duplicatesSuppressed() >= 1);
      assertThat(count(ds, "reply_handled")).isEqualTo(1);
      assertThat(count(ds, "charge")).isEqualTo(1);
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT authorised_charge FROM orders")) {
        rs.next();
        assertThat(rs.getLong(1)).isEqualTo(1);
      }
    }
  }

  private static KafkaSubscriber.Builder replySubscriber(
      PostboxTestContext ctx,
      DataSource ds,
      DurableRequests payments,
      String replies,
      String group) {
    Subscription sub =
        Subscription.builder(group)
            .topics(replies)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    return KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
        .inbox(PostgresInboxStore.create(ds))
        .deadLetters(PostgresDeadLetterStore.create(ds))
        .handler(
            payments.replyHandler((reply, d) -> {
              long charge = Long.parseLong(reply.payload().asString().replaceAll("[^0-9]", ""));
              Connection c = d.connection().orElseThrow();
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO reply_handled (request_id, charge) VALUES (?, ?)")) {
                ps.setObject(1, reply.requestId());
                ps.setLong(2, charge);
                ps.executeUpdate();
              }
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "UPDATE orders SET authorised_charge = ? WHERE id = 'order-1'")) {
                ps.setLong(1, charge);
                ps.executeUpdate();
              }
            }));
  }

  private static long count(DataSource ds, String table) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
