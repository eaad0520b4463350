package dev.postbox.rabbitmq;

import static dev.postbox.rabbitmq.DurableOrders.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Durable requests on RabbitMQ, as {@code DurableRequestIT} on Kafka: the request is written
 * through the outbox in the caller's transaction (with the order row), the relay publishes it, a
 * responder answers it to the reply topic's exchange; the requesting service's reply subscription
 * is closed (as by a crash) between the request and the reply, the reply waits in its durable shard
 * queues, and after its restart the reply is handled exactly once, even though the responder sends
 * it twice. A reply topic nobody subscribed to gets its reply returned and dead-lettered with that
 * reason.
 */
@PostboxTest
class RabbitDurableRequestIT {

  private static final Duration WAIT = Duration.ofSeconds(60);
  private final List<AutoCloseable> open = new ArrayList<>();
  private final CountDownLatch answer = new CountDownLatch(1);
  private RabbitMqServer server;
  private DataSource ds;
  private String requests;
  private RabbitSubscriber payments;

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws Exception {
    server = RabbitMqServer.sharedOrSkip();
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    DurableOrders.createTables(ds);
    requests = "payments-" + UUID.randomUUID();
    payments = startPayments(server.uri(), ds, requests, answer, open);
  }

  @AfterEach
  void tearDown() throws Exception {
    answer.countDown();
    for (AutoCloseable c : open.reversed()) {
      c.close();
    }
  }

  /**
   * The payments service: an {@code EFFECTIVELY_ONCE} subscription on {@code requestTopic} whose
   * responder charges once per request (after {@code answer} opens) and replies with the charge;
   * its responder and subscriber are added to {@code open}.
   */
  static RabbitSubscriber startPayments(
      String uri,
      DataSource ds,
      String requestTopic,
      CountDownLatch answer,
      List<AutoCloseable> open) {
    Subscription sub =
        Subscription.builder("payments-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(requestTopic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(2)
                        .backoff(new Backoff(Duration.ofMillis(10), Duration.ofMillis(20), 2, 0))
                        .build()))
            .build();
    RabbitResponder responder = RabbitResponder.builder(uri).replyType("charge.authorised").build();
    open.add(responder);
    RabbitSubscriber s =
        RabbitSubscriber.builder(uri, sub)
            .shards(2)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .handler(
                responder.handler(
                    sub,
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
                    }))
            .build();
    open.add(s);
    s.start(); // declares the request topic's queues
    return s;
  }

  private Relay relay() {
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ds),
                RabbitRelayPublisher.builder(server.uri())
                    .confirmTimeout(Duration.ofSeconds(10))
                    .build())
            .instanceId("relay-" + UUID.randomUUID())
            .pollInterval(Duration.ofMillis(100))
            .build();
    open.add(relay);
    relay.start();
    return relay;
  }

  @Test
  void aReplyThatComesBackWhileTheRequesterIsDownIsHandledOnceAfterItsRestart() throws Exception {
    String replies = "payment-replies-" + UUID.randomUUID();
    DurableRequests durable = RabbitRequester.durableRequests(replies);
    String group = "orders-replies-" + UUID.randomUUID().toString().substring(0, 8);
    Relay relay = relay();

    // orders: the reply subscription (declares its durable shard queues) runs, then "crashes"
    RabbitSubscriber orders =
        DurableOrders.replySubscriber(server.uri(), ds, durable, replies, group);
    orders.start();
    Message request = DurableOrders.order(ds, durable, requests, "order-1");
    assertThat(request.header(RequestReplyHeaders.REPLY_TO)).contains("/exchanges/" + replies);
    await().atMost(WAIT).until(() -> relay.stats().published() >= 1);

    orders.close(); // the requesting service goes down before the reply
    answer.countDown();
    await().atMost(WAIT).until(() -> count(ds, "SELECT count(*) FROM charge") == 1);
    // the request again (as a relay's republish after a crash): the same reply again
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      p.publish(List.of(request));
    }
    await().atMost(WAIT).until(() -> payments.stats().duplicatesSuppressed() >= 1);
    assertThat(count(ds, "SELECT count(*) FROM reply_handled")).as("nobody read yet").isZero();

    // the restarted service (same subscription) handles the reply, once
    RabbitSubscriber restarted =
        DurableOrders.replySubscriber(server.uri(), ds, durable, replies, group);
    open.add(restarted);
    restarted.start();
    await().atMost(WAIT).until(() -> count(ds, "SELECT count(*) FROM reply_handled") == 1);
    await().atMost(WAIT).until(() -> restarted.stats().duplicatesSuppressed() >= 1);
    assertThat(count(ds, "SELECT count(*) FROM reply_handled")).isEqualTo(1);
    assertThat(count(ds, "SELECT count(*) FROM charge")).isEqualTo(1);
    assertThat(count(ds, "SELECT authorised_charge FROM orders WHERE id = 'order-1'")).isEqualTo(1);
    assertThat(restarted.stats().duplicatesSuppressed()).isEqualTo(1);
  }

  @Test
  void aReplyToATopicNobodySubscribedToIsReturnedAndDeadLetteredWithTheReason() throws Exception {
    answer.countDown();
    String nobody = "nobody-replies-" + UUID.randomUUID();
    relay();
    Message request =
        DurableOrders.order(ds, RabbitRequester.durableRequests(nobody), requests, "o");
    await()
        .atMost(WAIT)
        .until(() ->
            count(
                    ds,
                    "SELECT count(*) FROM postbox_dead_letter WHERE message_id = '"
                        + request.id()
                        + "' AND error_message LIKE '%no queue is bound to reply topic ''"
                        + nobody
                        + "''%'")
                == 1);
    assertThat(count(ds, "SELECT count(*) FROM charge"))
        .as("charged once, replied in vain")
        .isOne();
  }
}
