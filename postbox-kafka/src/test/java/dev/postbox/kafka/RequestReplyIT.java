package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestTimeoutException;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
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
 * Request/reply on Kafka against the test kit's broker and PostgreSQL: a payments responder
 * authorises charges ({@code EFFECTIVELY_ONCE}, the reply stored with the inbox row), two requester
 * instances each read their own partition of the reply topic.
 */
@PostboxTest
class RequestReplyIT extends Subscribers {

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private DataSource ds;
  private String requests;
  private String replies;
  private Subscription subscription;
  private final CountDownLatch slow = new CountDownLatch(1);

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws Exception {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE charge (n bigserial PRIMARY KEY, request_id uuid NOT NULL)");
    }
    requests = ctx.topic("payments", 2);
    replies = ctx.topic("payments-replies", 2);
    subscription =
        Subscription.builder("payments-" + UUID.randomUUID())
            .topics(requests)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    KafkaResponder responder =
        KafkaResponder.builder(ctx.bootstrapServers())
            .source("/payments")
            .replyType("charge.authorised")
            .build();
    closeables.add(responder);
    start(
        KafkaSubscriber.builder(ctx.bootstrapServers(), subscription)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .handler(
                responder.handler(
                    subscription,
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
                    })));
  }

  @AfterEach
  void tearDown() throws Exception {
    slow.countDown();
    closeSubscribers();
    subscribers.clear();
    for (AutoCloseable c : closeables.reversed()) {
      c.close();
    }
  }

  private KafkaRequester requester(PostboxTestContext ctx, int partition, List<Reply> late) {
    KafkaRequester r =
        KafkaRequester.builder(ctx.bootstrapServers(), replies)
            .name("orders-" + partition)
            .replyPartition(partition)
            .lateReplyListener(late::add)
            .build()
            .start();
    closeables.add(r);
    return r;
  }

  private Message authorise(String order) {
    return Message.builder(requests, "charge.authorise").key(order).jsonPayload("{}").build();
  }

  @Test
  void eachInstanceGetsTheRepliesToItsOwnRequestsAndARepeatedRequestTheSameReply(
      PostboxTestContext ctx) throws Exception {
    KafkaRequester a = requester(ctx, 0, new CopyOnWriteArrayList<>());
    KafkaRequester b = requester(ctx, 1, new CopyOnWriteArrayList<>());
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
    assertThat(a.stats().replied()).isEqualTo(20);
    assertThat(a.stats().unknownReplies()).as("B's replies never reach A").isZero();
    assertThat(b.stats().unknownReplies()).isZero();

    // the requester retries a request that was answered (as after a timeout): same reply, no charge
    Message once = authorise("a-again");
    Reply first = a.requestAndWait(once, Duration.ofSeconds(60));
    Reply again = a.requestAndWait(once, Duration.ofSeconds(60));
    assertThat(again.payload()).isEqualTo(first.payload());
    assertThat(again.message().id()).isEqualTo(first.message().id());
    assertThat(charges(once.id())).as("charged once").isEqualTo(1);
    assertThat(charges()).isEqualTo(41);
    assertThat(subscribers.getFirst().stats().duplicatesSuppressed()).isEqualTo(1);
  }

  @Test
  void aRequestThatTimesOutNamesItselfAndItsLateReplyGoesToTheListener(PostboxTestContext ctx)
      throws Exception {
    List<Reply> late = new CopyOnWriteArrayList<>();
    KafkaRequester a = requester(ctx, 0, late);
    Message slowOne = authorise("slow");
    assertThatThrownBy(() -> a.requestAndWait(slowOne, Duration.ofMillis(300)))
        .isInstanceOf(RequestTimeoutException.class)
        .hasMessageContaining(slowOne.id().toString());
    slow.countDown();
    await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(late).hasSize(1));
    assertThat(late.getFirst().requestId()).isEqualTo(slowOne.id());
    assertThat(a.stats().timedOut()).isEqualTo(1);
    assertThat(a.stats().lateReplies()).isEqualTo(1);
    assertThat(a.stats().replied()).isZero();
  }

  @Test
  void aRequestWithoutAReplyAddressIsDeadLetteredWithTheReason(PostboxTestContext ctx)
      throws Exception {
    try (Effects fx = new Effects(ds, ctx.bootstrapServers())) {
      Message bare = authorise("no-reply-to");
      fx.publishAll(List.of(bare.toBuilder().correlationId(bare.id().toString()).build()));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> deadLetters("%has no reply address%") == 1);
    }
    assertThat(charges()).isZero();
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

  private long charges() throws Exception {
    return count("SELECT count(*) FROM charge", null);
  }

  private long charges(UUID id) throws Exception {
    return count("SELECT count(*) FROM charge WHERE request_id = ?", id);
  }

  private long deadLetters(String pattern) throws Exception {
    return count("SELECT count(*) FROM postbox_dead_letter WHERE error_message LIKE ?", pattern);
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
