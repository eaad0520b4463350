package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.Replayer;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 3 on RabbitMQ: the replay of one subscription's dead letter goes to that
 * subscription's own consistent-hash exchange, so another subscription of the topic (at-least-once,
 * no inbox) never receives it. A later message of the same key, published after the replay, is the
 * barrier: once the other subscription applied it, the replay would have been applied before it.
 */
@PostboxTest
class RabbitReplayRouteIT {

  private static final Duration WAIT = Duration.ofSeconds(120);

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  static final class NotYetFixed extends PermanentMessageException {
    NotYetFixed() {
      super("product does not exist (yet)");
    }
  }

  @Test
  void aReplayReachesTheSubscriptionThatDeadLetteredItOnly(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = RabbitEndToEndIT.prepare(ctx);
    String topic = "orders-" + UUID.randomUUID();
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String billing = "billing-" + suffix;
    String ledger = "ledger-" + suffix;
    DeadLetterStore dead = PostgresDeadLetterStore.create(ds);
    AtomicBoolean fixed = new AtomicBoolean();
    List<Message> billed = new CopyOnWriteArrayList<>();
    RabbitSubscriber billingSub =
        start(
            RabbitSubscriber.builder(
                    server.uri(), subscription(billing, topic, DeliveryGuarantee.EFFECTIVELY_ONCE))
                .inbox(PostgresInboxStore.create(ds))
                .deadLetters(dead)
                .shards(3)
                .handler(d -> {
                  if (!fixed.get()) {
                    throw new NotYetFixed();
                  }
                  RabbitEndToEndIT.apply(d.connection().orElseThrow(), billing, d);
                  billed.add(d.message());
                }));
    RabbitSubscriber ledgerSub =
        start(
            RabbitSubscriber.builder(
                    server.uri(), subscription(ledger, topic, DeliveryGuarantee.AT_LEAST_ONCE))
                .shards(3)
                .handler(d -> {
                  try (Connection c = ds.getConnection()) {
                    RabbitEndToEndIT.apply(c, ledger, d);
                  }
                }));
    open.add(RabbitEndToEndIT.startRelay(server, ds));
    Message original = write(ds, topic, 1);
    await().atMost(WAIT).until(() -> billingSub.stats().deadLettered() == 1);
    await().atMost(WAIT).until(() -> effects(ds, ledger, original.id()) == 1);
    long letter = dead.query(DeadLetterStore.Query.all(10)).get(0).id();

    fixed.set(true);
    Replayer replayer =
        Replayer.builder(ds, dead, RabbitDeadLetters.decoder()).by("ops@test").build();
    assertThat(replayer.replay(letter).replayed()).containsExactly(letter);
    await().atMost(WAIT).until(() -> effects(ds, billing, original.id()) == 1);
    Message marker = write(ds, topic, 2); // same key, behind the replay in the outbox
    await().atMost(WAIT).until(() -> effects(ds, ledger, marker.id()) == 1);

    assertThat(effects(ds, ledger, original.id()))
        .as("the subscription without an inbox applied the message once in total")
        .isEqualTo(1);
    assertThat(ledgerSub.stats().received())
        .as("it never received the replay: it went to billing's own exchange")
        .isEqualTo(2);
    List<Message> copies = billed.stream().filter(m -> m.id().equals(original.id())).toList();
    assertThat(copies).as("billing applied the replay once").hasSize(1);
    assertThat(copies.get(0).header("postbox-replay-of")).contains(Long.toString(letter));
    assertThat(copies.get(0).header("postbox-replayed-by")).contains("ops@test");
    assertThat(copies.get(0).header("postbox-replay-target")).contains(billing);
  }

  private RabbitSubscriber start(RabbitSubscriber.Builder b) {
    RabbitSubscriber s = b.build();
    s.start();
    open.add(s);
    return s;
  }

  private static Subscription subscription(String name, String topic, DeliveryGuarantee g) {
    return Subscription.builder(name).topics(topic).guarantee(g).ordering(Ordering.KEY).build();
  }

  private static Message write(DataSource ds, String topic, int seq) {
    Message m =
        Message.builder(topic, "order.created")
            .key("order-1")
            .jsonPayload("{\"seq\":" + seq + "}")
            .build();
    Outbox.postgres()
        .inTransaction(
            ds,
            tx -> {
              tx.write(m);
              return null;
            });
    return m;
  }

  private static long effects(DataSource ds, String consumer, UUID message) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM effect WHERE consumer = ? AND message_id = ?")) {
      ps.setString(1, consumer);
      ps.setObject(2, message);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
