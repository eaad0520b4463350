package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@PostboxTest
class ConsumerIT extends Subscribers {

  /** A subscriber whose handler applies the effect the way its guarantee allows. */
  private KafkaSubscriber start(
      PostboxTestContext ctx, Effects fx, Subscription sub, InboxStore inbox) {
    KafkaSubscriber.Builder b = KafkaSubscriber.builder(ctx.bootstrapServers(), sub);
    if (sub.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      b.inbox(inbox).handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d));
    } else {
      b.handler(d -> fx.applyAutoCommit(sub.name(), d));
    }
    return start(b);
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = DeliveryGuarantee.class,
      mode = EnumSource.Mode.EXCLUDE,
      names = "DEDUPLICATED") // DEDUPLICATED needs Redis: RedisDeduplicationIT
  void everyEventPublishedTwiceGivesTheOutcomeOfTheGuarantee(
      DeliveryGuarantee guarantee, PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 3);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> once = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        once.add(Effects.message(topic, "k" + (i % 40), i));
      }
      List<Message> twice = new ArrayList<>(once);
      twice.addAll(once); // the same ids again, as a relay would after a crash
      fx.publishAll(twice);
      Subscription sub =
          Subscription.builder("inventory-" + guarantee).topics(topic).guarantee(guarantee).build();
      KafkaSubscriber s = start(ctx, fx, sub, PostgresInboxStore.create(ctx.dataSource()));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 600 && s.inFlight() == 0);
      assertThat(fx.distinctEffects(sub.name())).isEqualTo(300);
      switch (guarantee) {
        case EFFECTIVELY_ONCE -> {
          assertThat(fx.effects(sub.name())).as("one effect per id").isEqualTo(300);
          assertThat(s.stats().duplicatesSuppressed()).isEqualTo(300);
        }
        case AT_LEAST_ONCE, AT_MOST_ONCE -> {
          // no inbox: every delivery is applied; nothing is lost without a crash
          assertThat(fx.effects(sub.name())).isEqualTo(600);
          assertThat(s.stats().duplicatesSuppressed()).isZero();
        }
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() ->
              fx.committedOffset(sub.name(), topic, 0)
                      + fx.committedOffset(sub.name(), topic, 1)
                      + fx.committedOffset(sub.name(), topic, 2)
                  == 600);
    }
  }

  @Test
  void sameIdDeliveredConcurrentlyToTwoInstancesIsAppliedOnce(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      InboxStore inbox = PostgresInboxStore.create(ctx.dataSource());
      Subscription sub =
          Subscription.builder("inventory")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .build();
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger entered = new AtomicInteger();
      for (int i = 0; i < 2; i++) {
        start(
            KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                .inbox(inbox)
                .handler(d -> {
                  entered.incrementAndGet();
                  Effects.awaitQuietly(release); // hold the first transaction open
                  Effects.apply(d.connection().orElseThrow(), sub.name(), d);
                }));
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> subscribers.stream().allMatch(s -> s.assignment().size() == 1));
      Message m = Effects.message(topic, "k", 1);
      fx.publish(m, 0);
      fx.publish(m, 1); // the same id on the other partition: the other instance gets it
      // one instance is inside the handler; the other waits on the inbox row's unique index
      await().atMost(Duration.ofSeconds(60)).until(() -> entered.get() == 1);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              fx.count(
                      "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                          + " AND query LIKE '%postbox_inbox%'")
                  == 1);
      release.countDown();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              subscribers.stream().mapToLong(s -> s.stats().received()).sum() == 2
                  && subscribers.stream().allMatch(s -> s.inFlight() == 0));
      assertThat(fx.effects(sub.name())).isEqualTo(1);
      assertThat(entered.get()).isEqualTo(1);
      assertThat(subscribers.stream().mapToLong(s -> s.stats().duplicatesSuppressed()).sum())
          .isEqualTo(1);
    }
  }

  @Test
  void twoConsumerGroupsEachApplyTheirOwnEffectOnce(PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        ms.add(Effects.message(topic, "k" + (i % 10), i));
      }
      fx.publishAll(ms);
      fx.publishAll(ms);
      InboxStore inbox = PostgresInboxStore.create(ctx.dataSource());
      for (String group : List.of("inventory", "analytics")) {
        start(
            ctx,
            fx,
            Subscription.builder(group)
                .topics(topic)
                .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                .build(),
            inbox);
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> fx.effects("inventory") == 200 && fx.effects("analytics") == 200);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> subscribers.stream().allMatch(s -> s.stats().received() == 400));
      assertThat(fx.effects("inventory")).isEqualTo(200);
      assertThat(fx.effects("analytics")).isEqualTo(200);
    }
  }

  @Test
  void keyOrderHoldsWithConcurrency64Over1000KeysOnOnePartition(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      int keys = 1000;
      int perKey = 10;
      List<Message> ms = new ArrayList<>();
      for (int seq = 0; seq < perKey; seq++) {
        for (int k = 0; k < keys; k++) {
          ms.add(Effects.message(topic, "key-" + k, seq));
        }
      }
      fx.publishAll(ms);
      Map<String, List<Long>> seen = new ConcurrentHashMap<>();
      CountDownLatch sixtyFourAtOnce = new CountDownLatch(64);
      AtomicInteger failures = new AtomicInteger();
      start(
          KafkaSubscriber.builder(
                  ctx.bootstrapServers(),
                  Subscription.builder("ordered")
                      .topics(topic)
                      .ordering(Ordering.KEY)
                      .concurrency(64)
                      .maxInFlight(2000)
                      .build())
              .handler(d -> {
                String key = d.message().key().orElseThrow();
                long seq = Long.parseLong(d.message().header("seq").orElseThrow());
                int k = Integer.parseInt(key.substring(4));
                if (seq == 0 && k < 64) { // 64 different keys of one partition in flight at once
                  sixtyFourAtOnce.countDown();
                  if (!sixtyFourAtOnce.await(60, TimeUnit.SECONDS)) {
                    failures.incrementAndGet();
                  }
                }
                seen.computeIfAbsent(
                        key, x -> java.util.Collections.synchronizedList(new ArrayList<>()))
                    .add(seq);
              }));
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> seen.values().stream().mapToInt(List::size).sum() == keys * perKey);
      assertThat(failures.get()).as("64 keys were never in flight together").isZero();
      List<Long> expected = new ArrayList<>();
      for (long s = 0; s < perKey; s++) {
        expected.add(s);
      }
      assertThat(seen).hasSize(keys);
      seen.forEach((k, v) -> assertThat(v).as(k).isEqualTo(expected));
    }
  }

  @Test
  void effectsStayOncePerIdAndInKeyOrderAcrossForcedRebalances(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 4);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      InboxStore inbox = PostgresInboxStore.create(ctx.dataSource());
      Subscription sub =
          Subscription.builder("rebalanced")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .concurrency(32)
              .build();
      List<Message> ms = new ArrayList<>();
      for (int seq = 0; seq < 30; seq++) {
        for (int k = 0; k < 100; k++) {
          ms.add(Effects.message(topic, "key-" + k, seq));
        }
      }
      fx.publishAll(ms);
      KafkaSubscriber first = start(ctx, fx, sub, inbox);
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects(sub.name()) >= 500);
      KafkaSubscriber second =
          start(ctx, fx, sub, inbox); // join: partitions are revoked mid-flight
      await().atMost(Duration.ofSeconds(60)).until(() -> second.assignment().size() > 0);
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects(sub.name()) >= 1500);
      first.close(); // leave: its partitions move, in-flight records finish or are redelivered
      await().atMost(Duration.ofSeconds(120)).until(() -> fx.distinctEffects(sub.name()) == 3000);
      await().atMost(Duration.ofSeconds(30)).until(() -> second.inFlight() == 0);
      assertThat(fx.effects(sub.name())).as("no duplicate effect").isEqualTo(3000);
      List<Long> expected = new ArrayList<>();
      for (long s = 0; s < 30; s++) {
        expected.add(s);
      }
      fx.effectOrder(sub.name()).forEach((k, v) -> assertThat(v).as(k).isEqualTo(expected));
    }
  }

  @Test
  void aSlowRecordAtTheHeadHoldsTheOffsetCommitBack(PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      ms.add(Effects.message(topic, "slow", 0));
      for (int i = 1; i < 100; i++) {
        ms.add(Effects.message(topic, "fast-" + i, i));
      }
      fx.publishAll(ms);
      CountDownLatch release = new CountDownLatch(1);
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(), Subscription.builder("held").topics(topic).build())
                  .handler(d -> {
                    if (d.message().key().orElseThrow().equals("slow")) {
                      Effects.awaitQuietly(release);
                    }
                    fx.applyAutoCommit("held", d);
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("held") == 99);
      // the 99 later records are done; give the loop several commit rounds, then look
      await().atMost(Duration.ofSeconds(30)).until(() -> s.stats().applied() == 99);
      // commits do happen (offset 0 = "the slow record is next"), but never past it
      await().atMost(Duration.ofSeconds(30)).until(() -> fx.committedOffset("held", topic, 0) == 0);
      for (int i = 0; i < 5; i++) {
        assertThat(fx.committedOffset("held", topic, 0))
            .as("nothing may be committed past the unfinished offset 0")
            .isZero();
      }
      release.countDown();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> fx.committedOffset("held", topic, 0) == 100);
    }
  }

  @Test
  void aCrashBetweenTheEffectCommitAndTheOffsetCommitAppliesNothingTwice(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        ms.add(Effects.message(topic, "k" + (i % 25), i));
      }
      fx.publishAll(ms);
      try (ChildJvm child =
          ChildJvm.builder(ConsumerChildMain.class)
              .args(ctx.jdbcUrl(), ctx.bootstrapServers(), topic, "crashing")
              .systemProperty(
                  CrashPoints.PROPERTY, "consumer.after-effect-before-offset-commit@150")
              .start()) {
        assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      }
      long applied = fx.effects("crashing");
      assertThat(applied).isGreaterThanOrEqualTo(150).isLessThan(400);
      Subscription sub =
          Subscription.builder("crashing")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .build();
      KafkaSubscriber s = start(ctx, fx, sub, PostgresInboxStore.create(ctx.dataSource()));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.distinctEffects("crashing") == 400);
      await().atMost(Duration.ofSeconds(30)).until(() -> s.inFlight() == 0);
      assertThat(fx.effects("crashing")).as("no second effect").isEqualTo(400);
      assertThat(s.stats().duplicatesSuppressed())
          .as("records applied but not committed before the crash came again")
          .isPositive();
    }
  }
}
