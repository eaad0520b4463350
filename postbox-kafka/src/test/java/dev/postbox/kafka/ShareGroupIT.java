package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The share-group queue mode (KIP-932) against the test kit's Kafka 4.4 broker: more consumers than
 * partitions, effectively once with the inbox, and delivery counts that end in the dead letters.
 */
@PostboxTest
class ShareGroupIT {

  private final List<KafkaShareSubscriber> started = new ArrayList<>();

  @AfterEach
  void closeAll() {
    started.forEach(KafkaShareSubscriber::close);
  }

  private KafkaShareSubscriber start(KafkaShareSubscriber.Builder b) {
    KafkaShareSubscriber s = b.build();
    started.add(s);
    s.start();
    return s;
  }

  /** The shortest acquisition lock the broker allows by default: a dead holder's records return. */
  static final Duration LOCK = Duration.ofSeconds(15);

  static Subscription effectivelyOnce(String name, String topic) {
    return unordered(name, topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .concurrency(2) // 3 instances x 2 inbox transactions: within the test pool's 8
        .build();
  }

  private static Subscription.Builder unordered(String name, String topic) {
    return Subscription.builder(name)
        .topics(topic)
        .ordering(Ordering.UNORDERED)
        .shutdownTimeout(Duration.ofSeconds(2));
  }

  @Test
  void threeConsumersShareOnePartitionAndApplyEachMessageOnce(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("share-orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      InboxStore inbox = PostgresInboxStore.create(ctx.dataSource());
      Subscription sub = effectivelyOnce("share-inventory", topic);
      // the first records of every instance wait until two instances hold records at once: only a
      // share group hands records of one partition to two consumers while the first are unacked
      Set<Integer> holding = ConcurrentHashMap.newKeySet();
      CountDownLatch two = new CountDownLatch(2);
      AtomicInteger[] handled = new AtomicInteger[3];
      for (int i = 0; i < 3; i++) {
        int instance = i;
        handled[i] = new AtomicInteger();
        start(
            KafkaShareSubscriber.builder(ctx.bootstrapServers(), sub)
                .consumerProperty("max.poll.records", 5)
                .inbox(inbox)
                .handler(d -> {
                  if (holding.add(instance)) {
                    two.countDown();
                  }
                  if (!two.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("no second instance got records in 60 s");
                  }
                  Effects.apply(d.connection().orElseThrow(), sub.name(), d);
                  handled[instance].incrementAndGet();
                }));
      }
      List<Message> messages = new ArrayList<>();
      for (int i = 0; i < 120; i++) {
        messages.add(Effects.message(topic, "k" + (i % 7), i));
      }
      fx.publishAll(messages);

      await().atMost(Duration.ofSeconds(120)).until(() -> fx.distinctEffects(sub.name()) == 120);
      assertThat(fx.effects(sub.name())).as("one effect per message id").isEqualTo(120);
      assertThat(holding)
          .as("instances that held records of the one partition")
          .hasSizeGreaterThan(1);
      int total = handled[0].get() + handled[1].get() + handled[2].get();
      assertThat(total).isEqualTo(120);
    }
  }

  @Test
  void aConsumerKilledAfterItsEffectAndBeforeItsAckAppliesNothingTwice(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("share-crash", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        ms.add(Effects.message(topic, "k" + (i % 9), i));
      }
      fx.publishAll(ms);
      try (ChildJvm child =
          ChildJvm.builder(ShareConsumerChildMain.class)
              .args(ctx.jdbcUrl(), ctx.bootstrapServers(), topic, "share-crashing")
              .systemProperty(
                  CrashPoints.PROPERTY,
                  CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT + "@60")
              .start()) {
        assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      }
      long applied = fx.effects("share-crashing");
      assertThat(applied).isGreaterThanOrEqualTo(60).isLessThan(200);
      // the records the dead consumer held come back when their locks expire (15 s)
      KafkaShareSubscriber s =
          start(
              KafkaShareSubscriber.builder(
                      ctx.bootstrapServers(), effectivelyOnce("share-crashing", topic))
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .lockDuration(LOCK)
                  .handler(d -> Effects.apply(d.connection().orElseThrow(), "share-crashing", d)));
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> fx.distinctEffects("share-crashing") == 200);
      await().atMost(Duration.ofSeconds(30)).until(() -> s.inFlight() == 0);
      assertThat(fx.effects("share-crashing")).as("no second effect").isEqualTo(200);
      assertThat(s.stats().duplicatesSuppressed())
          .as("the record committed but not acknowledged before the kill came again")
          .isPositive();
    }
  }

  @Test
  void aRecordWhoseDeliveriesNeverEndIsDeadLetteredAfterMaxDeliveries(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("share-poison", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      DeadLetterStore deadLetters = PostgresDeadLetterStore.create(ctx.dataSource());
      Subscription sub =
          unordered("share-mailer", topic).guarantee(DeliveryGuarantee.AT_LEAST_ONCE).build();
      Message poison = Effects.message(topic, "p", 1);
      fx.publish(poison, null);
      AtomicInteger runs = new AtomicInteger();
      // two deliveries that never end: each instance is closed while the handler still runs, so
      // the record is released (or its lock lost) and delivered again
      for (int delivery = 1; delivery <= 2; delivery++) {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        KafkaShareSubscriber s =
            start(
                KafkaShareSubscriber.builder(ctx.bootstrapServers(), sub)
                    .maxDeliveries(2)
                    .deadLetters(deadLetters)
                    .handler(d -> {
                      runs.incrementAndGet();
                      entered.countDown();
                      never.await(); // until interrupted at close
                    }));
        assertThat(entered.await(60, TimeUnit.SECONDS)).as("delivery %d ran", delivery).isTrue();
        s.close();
      }
      AtomicInteger thirdRuns = new AtomicInteger();
      start(
          KafkaShareSubscriber.builder(ctx.bootstrapServers(), sub)
              .maxDeliveries(2)
              .deadLetters(deadLetters)
              .handler(d -> thirdRuns.incrementAndGet()));

      await()
          .atMost(Duration.ofSeconds(90))
          .until(() -> !deadLetters.query(DeadLetterStore.Query.all(10)).isEmpty());
      DeadLetterStore.DeadLetter letter = deadLetters.query(DeadLetterStore.Query.all(10)).get(0);
      assertThat(letter.letter().messageId()).contains(poison.id());
      assertThat(letter.letter().errorClass())
          .isEqualTo(DeliveryCountExceededException.class.getName());
      assertThat(letter.letter().errorMessage()).contains("delivered 3 times");
      assertThat(runs.get()).as("the two deliveries that ran").isEqualTo(2);
      assertThat(thirdRuns.get()).as("the third delivery does not run").isZero();
    }
  }

  @Test
  void orderedOrBatchedOrDeduplicatedSubscriptionsAreRefusedAtBuild() {
    Subscription keyed = Subscription.builder("keyed").topics("t").build();
    assertThatThrownBy(
            () -> KafkaShareSubscriber.builder("localhost:1", keyed).handler(d -> {}).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("share groups do not keep order");
    Subscription dedup =
        Subscription.builder("dedup")
            .topics("t")
            .ordering(Ordering.UNORDERED)
            .guarantee(DeliveryGuarantee.DEDUPLICATED)
            .build();
    assertThatThrownBy(
            () -> KafkaShareSubscriber.builder("localhost:1", dedup).handler(d -> {}).build())
        .hasMessageContaining("DEDUPLICATED is not supported");
    Subscription eo =
        Subscription.builder("eo")
            .topics("t")
            .ordering(Ordering.UNORDERED)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    assertThatThrownBy(
            () -> KafkaShareSubscriber.builder("localhost:1", eo).handler(d -> {}).build())
        .hasMessageContaining("needs an inbox");
    assertThatThrownBy(
            () -> KafkaShareSubscriber.builder("localhost:1", eo).consumerProperty("group.id", "x"))
        .hasMessageContaining("fixed");
    assertThatThrownBy(() -> KafkaShareSubscriber.builder("localhost:1", eo).maxDeliveries(0))
        .hasMessageContaining("maxDeliveries");
  }
}
