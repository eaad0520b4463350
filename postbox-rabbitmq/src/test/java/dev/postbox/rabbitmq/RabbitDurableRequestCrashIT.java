package dev.postbox.rabbitmq;

import static dev.postbox.rabbitmq.DurableOrders.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The requesting service crashes between the commit of its durable requests and their publication:
 * the orders service (its own JVM, {@link DurableOrdersChildMain}) commits 20 orders, each with its
 * request, and is halted once its relay has claimed them, before anything is published ({@code
 * relay.after-claim}); restarted, it is halted again after the broker confirmed the requests and
 * before they were marked ({@code relay.after-ack-before-mark}), so a third start publishes them
 * again. Every request is still published and answered exactly once: 20 charges, one per request,
 * 20 replies handled, one per request, every order authorised with its charge.
 */
@PostboxTest
class RabbitDurableRequestCrashIT {

  private static final int ORDERS = 20;
  private static final Duration WAIT = Duration.ofSeconds(120);

  @Test
  void requestsCommittedBeforeTheRequesterCrashedArePublishedAndAnsweredOnce(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    DurableOrders.createTables(ds);
    String requests = "payments-" + UUID.randomUUID();
    String replies = "payment-replies-" + UUID.randomUUID();
    String replySubscription = "orders-replies-" + UUID.randomUUID().toString().substring(0, 8);
    List<AutoCloseable> open = new ArrayList<>();
    try {
      RabbitSubscriber payments =
          RabbitDurableRequestIT.startPayments(
              server.uri(), ds, requests, new CountDownLatch(0), open);

      // 1: committed, claimed, halted before the publish
      try (ChildJvm child =
          orders(ctx, server, requests, replies, replySubscription, ORDERS, "orders-1")
              .systemProperty(CrashPoints.PROPERTY, CrashPoints.RELAY_AFTER_CLAIM + "@1")
              .start()) {
        assertThat(child.waitFor(WAIT)).contains(CrashPoints.EXIT_CODE);
        assertThat(child.logTail(50))
            .contains("committed " + ORDERS)
            .contains(CrashPoints.MARKER + " " + CrashPoints.RELAY_AFTER_CLAIM);
      }
      assertThat(unpublished(ds)).isEqualTo(ORDERS);
      assertThat(count(ds, "SELECT count(*) FROM orders")).isEqualTo(ORDERS);

      // 2: published, confirmed, halted before the mark: the next relay publishes them again
      try (ChildJvm child =
          orders(ctx, server, requests, replies, replySubscription, 0, "orders-2")
              .systemProperty(CrashPoints.PROPERTY, CrashPoints.RELAY_AFTER_ACK_BEFORE_MARK + "@1")
              .start()) {
        assertThat(child.waitFor(WAIT)).contains(CrashPoints.EXIT_CODE);
        assertThat(child.logTail(50))
            .contains(CrashPoints.MARKER + " " + CrashPoints.RELAY_AFTER_ACK_BEFORE_MARK);
      }
      assertThat(unpublished(ds)).isEqualTo(ORDERS);

      // 3: runs until every reply is handled
      try (ChildJvm child =
          orders(ctx, server, requests, replies, replySubscription, 0, "orders-3").start()) {
        await().atMost(WAIT).until(() -> unpublished(ds) == 0);
        await().atMost(WAIT).until(() -> count(ds, "SELECT count(*) FROM reply_handled") == ORDERS);
        // the requests published twice reach payments twice: the second time a duplicate
        await().atMost(WAIT).until(() -> payments.stats().duplicatesSuppressed() >= 1);
        assertThat(child.isAlive()).isTrue();
      }
      assertThat(count(ds, "SELECT count(*) FROM charge")).isEqualTo(ORDERS);
      assertThat(count(ds, "SELECT count(DISTINCT request_id) FROM charge")).isEqualTo(ORDERS);
      assertThat(count(ds, "SELECT count(*) FROM reply_handled")).isEqualTo(ORDERS);
      assertThat(count(ds, "SELECT count(DISTINCT request_id) FROM reply_handled"))
          .isEqualTo(ORDERS);
      assertThat(
              count(
                  ds,
                  "SELECT count(*) FROM orders o JOIN reply_handled r ON r.charge ="
                      + " o.authorised_charge JOIN charge c ON c.n = r.charge AND c.request_id ="
                      + " r.request_id"))
          .as("every order carries a charge whose reply answered that charge's request")
          .isEqualTo(ORDERS);
      assertThat(count(ds, "SELECT count(*) FROM postbox_dead_letter")).isZero();
      System.out.printf(
          "durable requests: %d written, %d charged, %d replies handled, payments suppressed %d"
              + " duplicate requests%n",
          ORDERS,
          count(ds, "SELECT count(*) FROM charge"),
          count(ds, "SELECT count(*) FROM reply_handled"),
          payments.stats().duplicatesSuppressed());
    } finally {
      for (AutoCloseable c : open.reversed()) {
        c.close();
      }
    }
  }

  private static ChildJvm.Builder orders(
      PostboxTestContext ctx,
      RabbitMqServer server,
      String requests,
      String replies,
      String replySubscription,
      int count,
      String instance) {
    return ChildJvm.builder(DurableOrdersChildMain.class)
        .args(
            ctx.jdbcUrl(),
            server.uri(),
            requests,
            replies,
            replySubscription,
            Integer.toString(count),
            instance);
  }

  private static long unpublished(DataSource ds) throws Exception {
    return count(ds, "SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL");
  }
}
