package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.ReplayRoute;
import dev.postbox.jdbc.Replayer;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 3: replaying one consumer group's dead letter must not re-apply the message in the
 * other groups of its topic. Two groups on one topic: "billing" (effectively-once, inbox)
 * dead-letters the message, "ledger" (at-least-once, no inbox) applies it; the letter is replayed.
 */
@PostboxTest
class ReplayRouteIT extends Subscribers {

  private static final Duration WAIT = Duration.ofSeconds(60);

  static final class NotYetFixed extends PermanentMessageException {
    NotYetFixed() {
      super("product does not exist (yet)");
    }
  }

  /** The two groups after billing dead-lettered the message and ledger applied it. */
  private final class Scenario implements AutoCloseable {
    final String topic;
    final String billing;
    final String ledger;
    final Effects fx;
    final RecordingMetrics metrics = new RecordingMetrics();
    final AtomicBoolean fixed = new AtomicBoolean();
    final List<Message> billed = new CopyOnWriteArrayList<>();
    final KafkaSubscriber billingSub;
    final KafkaSubscriber ledgerSub;
    final Relay relay;
    final Replayer replayer;
    final long deadLetter;

    Scenario(PostboxTestContext ctx, String base) throws Exception {
      topic = ctx.topic(base, 1);
      billing = "billing-" + topic;
      ledger = "ledger-" + topic;
      fx = new Effects(ctx.dataSource(), ctx.bootstrapServers());
      DeadLetterStore dead = PostgresDeadLetterStore.create(ctx.dataSource());
      billingSub =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder(billing)
                          .topics(topic)
                          .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                          .build())
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .deadLetters(dead)
                  .handler(d -> {
                    if (!fixed.get()) {
                      throw new NotYetFixed();
                    }
                    Effects.apply(d.connection().orElseThrow(), billing, d);
                    billed.add(d.message());
                  }));
      ledgerSub =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder(ledger)
                          .topics(topic)
                          .guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                          .build())
                  .metrics(metrics)
                  .handler(d -> fx.applyAutoCommit(ledger, d)));
      fx.publish(Effects.message(topic, "order-1", 1), null);
      await().atMost(WAIT).until(() -> billingSub.stats().deadLettered() == 1);
      await().atMost(WAIT).until(() -> fx.effects(ledger) == 1);
      deadLetter =
          fx.count("SELECT id FROM postbox_dead_letter WHERE consumer = '" + billing + "'");
      relay =
          Relay.builder(
                  PostgresRelayStore.create(ctx.dataSource()),
                  KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
              .pollInterval(Duration.ofMillis(100))
              .build();
      relay.start();
      replayer =
          Replayer.builder(ctx.dataSource(), dead, KafkaDeadLetters.decoder())
              .by("ops@test")
              .build();
      fixed.set(true); // the fix is deployed
    }

    /** Replays the letter and waits until both groups have received the copy and finished it. */
    void replay(Function<Replayer, ReplayResult> how) throws Exception {
      assertThat(how.apply(replayer).replayed()).containsExactly(deadLetter);
      await().atMost(WAIT).until(() -> fx.effects(billing) == 1);
      await()
          .atMost(WAIT)
          .until(() -> ledgerSub.stats().received() == 2 && ledgerSub.inFlight() == 0);
    }

    String auditReason() throws Exception {
      try (var c = fx.ds.getConnection();
          var ps =
              c.prepareStatement(
                  "SELECT coalesce(reason, '') FROM postbox_replay_audit"
                      + " WHERE action = 'REPLAY' AND dead_letter_id = ?")) {
        ps.setLong(1, deadLetter);
        try (var rs = ps.executeQuery()) {
          assertThat(rs.next()).as("an audit row").isTrue();
          return rs.getString(1);
        }
      }
    }

    long replaysSkippedByLedger() {
      return metrics.count(
          MetricName.CONSUMER_REPLAYS_SKIPPED,
          Tags.of("group", ledger, "topic", topic, "partition", "0"));
    }

    @Override
    public void close() throws Exception {
      relay.close();
      fx.close();
    }
  }

  @Test
  void aReplayIsAppliedByTheGroupThatDeadLetteredItOnlyAndSaysItIsAReplay(PostboxTestContext ctx)
      throws Exception {
    try (Scenario s = new Scenario(ctx, "orders")) {
      s.replay(r -> r.replay(s.deadLetter));

      assertThat(s.fx.effects(s.ledger))
          .as("the group without an inbox applied the message once in total")
          .isEqualTo(1);
      assertThat(s.fx.effects(s.billing)).as("the group that dead-lettered it, once").isEqualTo(1);
      assertThat(s.billed).hasSize(1);
      Message copy = s.billed.get(0);
      assertThat(copy.header("postbox-replay-of")).contains(Long.toString(s.deadLetter));
      assertThat(copy.header("postbox-replayed-by")).contains("ops@test");
      assertThat(copy.header("postbox-replay-target")).contains(s.billing);
      assertThat(s.replaysSkippedByLedger()).as("counted where it was passed over").isEqualTo(1);
      assertThat(s.auditReason()).as("a targeted replay").isEmpty();
    }
  }

  @Test
  void theNamedBroadcastReplayReachesEveryGroupAndIsAuditedAsBroadcast(PostboxTestContext ctx)
      throws Exception {
    try (Scenario s = new Scenario(ctx, "invoices")) {
      s.replay(r -> r.replay(s.deadLetter, ReplayRoute.BROADCAST));

      assertThat(s.fx.effects(s.ledger)).as("broadcast: ledger applies it again").isEqualTo(2);
      assertThat(s.fx.effects(s.billing)).isEqualTo(1);
      Message copy = s.billed.get(0);
      assertThat(copy.header("postbox-replay-of")).contains(Long.toString(s.deadLetter));
      assertThat(copy.header("postbox-replayed-by")).contains("ops@test");
      assertThat(copy.header("postbox-replay-target")).as("no target").isEmpty();
      assertThat(s.replaysSkippedByLedger()).isZero();
      assertThat(s.auditReason()).startsWith("broadcast");
    }
  }
}
