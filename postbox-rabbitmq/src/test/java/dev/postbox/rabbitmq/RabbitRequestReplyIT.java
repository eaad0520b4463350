package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.core.reply.RequestTimeoutException;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Request/reply on a real RabbitMQ node: a payments responder ({@code EFFECTIVELY_ONCE}, the reply
 * stored with the inbox row) answers requesters that each read an exclusive reply queue; a repeated
 * request gets the same reply, a slow one times out and its reply comes late, a reply to a queue
 * that is gone is returned and given up per the failure handler.
 */
@PostboxTest
class RabbitRequestReplyIT {

  private final List<AutoCloseable> open = new ArrayList<>();
  private final CountDownLatch slow = new CountDownLatch(1);
  private RabbitMqServer server;
  private DataSource ds;
  private String topic;
  private RabbitSubscriber responderSubscriber;

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws Exception {
    server = RabbitMqServer.sharedOrSkip();
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE charge (n bigserial PRIMARY KEY, request_id uuid NOT NULL)");
    }
    topic = "payments-" + UUID.randomUUID();
    Subscription sub =
        Subscription.builder("payments-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(2)
                        .backoff(
                            new dev.postbox.core.Backoff(
                                Duration.ofMillis(10), Duration.ofMillis(20), 2, 0))
                        .build()))
            .build();
    RabbitResponder responder =
        RabbitResponder.builder(server.uri())
            .source("/payments")
            .replyType("charge.authorised")
            .build();
    open.add(responder);
    responderSubscriber =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(2)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .handler(
                responder.handler(
                    sub,
                    d -> {
                      if (d.message().key().orElse("").equals("slow")) {
                        slow.await();
                      }
                      long n = charge(d.connection().orElseThrow(), d.message().id());
                      return Payload.json(
                          "{\"order\":\""
                              + d.message().key().orElseThrow()
                              + "\",\"charge\":"
                              + n
                              + "}");
                    }))
            .build();
    responderSubscriber.start(); // declares the request topic's exchange and queues
    open.add(responderSubscriber);
  }

  @AfterEach
  void tearDown() throws Exception {
    slow.countDown();
    for (AutoCloseable c : open.reversed()) {
      c.close();
    }
  }

  private RabbitRequester requester(String name, List<Reply> late) {
    RabbitRequester r =
        RabbitRequester.builder(server.uri())
            .name(name)
            .lateReplyListener(late::add)
            .build()
            .start();
    open.add(r);
    return r;
  }

  private Message authorise(String order) {
    return Message.builder(topic, "charge.authorise").key(order).jsonPayload("{}").build();
  }

  @Test
  void eachRequesterGetsItsOwnRepliesAndARepeatedRequestTheSameReply() throws Exception {
    RabbitRequester a = requester("orders-a", new CopyOnWriteArrayList<>());
    RabbitRequester b = requester("orders-b", new CopyOnWriteArrayList<>());
    List<CompletableFuture<Reply>> fromA = new ArrayList<>();
    List<CompletableFuture<Reply>> fromB = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      fromA.add(a.request(authorise("a-" + i), Duration.ofSeconds(60)));
      fromB.add(b.request(authorise("b-" + i), Duration.ofSeconds(60)));
    }
    for (int i = 0; i < 20; i++) {
      assertThat(fromA.get(i).get().payload().asString()).contains("\"order\":\"a-" + i + "\"");
      assertThat(fromB.get(i).get().payload().asString()).contains("\"order\":\"b-" + i + "\"");
    }
    assertThat(a.stats().unknownReplies()).isZero();
    assertThat(b.stats().unknownReplies()).isZero();

    Message once = authorise("a-again");
    Reply first = a.requestAndWait(once, Duration.ofSeconds(60));
    Reply again = a.requestAndWait(once, Duration.ofSeconds(60));
    assertThat(again.payload()).isEqualTo(first.payload());
    assertThat(again.message().correlationId()).contains(once.id().toString());
    assertThat(count("SELECT count(*) FROM charge WHERE request_id = ?", once.id())).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM charge", null)).isEqualTo(41);
    assertThat(responderSubscriber.stats().duplicatesSuppressed()).isEqualTo(1);
  }

  @Test
  void aSlowRequestTimesOutAndItsLateReplyGoesToTheListener() throws Exception {
    List<Reply> late = new CopyOnWriteArrayList<>();
    RabbitRequester a = requester("orders-late", late);
    Message slowOne = authorise("slow");
    assertThatThrownBy(() -> a.requestAndWait(slowOne, Duration.ofMillis(300)))
        .isInstanceOf(RequestTimeoutException.class)
        .hasMessageContaining(slowOne.id().toString());
    slow.countDown();
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(late).hasSize(1));
    assertThat(a.stats().lateReplies()).isEqualTo(1);
  }

  @Test
  void aReplyToAQueueThatIsGoneIsGivenUpWithTheReasonAndBadRequestsAreDeadLettered()
      throws Exception {
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      Message gone = authorise("gone");
      Message noReplyTo = authorise("no-reply-to");
      p.publish(
          List.of(
              gone.toBuilder()
                  .correlationId(gone.id().toString())
                  .header(
                      RequestReplyHeaders.REPLY_TO, "postbox.replies.nobody." + UUID.randomUUID())
                  .build(),
              noReplyTo.toBuilder().correlationId(noReplyTo.id().toString()).build()));
    }
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() ->
            count(
                        "SELECT count(*) FROM postbox_dead_letter WHERE error_message LIKE ?",
                        "%no longer exists%")
                    == 1
                && count(
                        "SELECT count(*) FROM postbox_dead_letter WHERE error_message LIKE ?",
                        "%has no reply address%")
                    == 1);
    assertThat(count("SELECT count(*) FROM charge", null))
        .as("the gone requester's charge is applied once; the bad request is not")
        .isEqualTo(1);
  }

  private static long charge(Connection c, UUID requestId) throws Exception {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO charge (request_id) VALUES (?) RETURNING n")) {
      ps.setObject(1, requestId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private long count(String sql, Object arg) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      if (arg != null) {
        ps.setObject(1, arg);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
