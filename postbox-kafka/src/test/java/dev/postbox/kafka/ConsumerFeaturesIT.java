package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.codec.EventTypes;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@PostboxTest
class ConsumerFeaturesIT extends Subscribers {

  record OrderCreated(String key, long seq) {}

  @Test
  void batchModeAppliesBatchesInOneTransactionAndFallsBackForAPoisonRecord(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        ms.add(Effects.message(topic, "k" + (i % 20), i));
      }
      fx.publishAll(ms);
      fx.publishAll(ms.subList(0, 100)); // duplicates, removed before the batch handler sees them
      List<Integer> batchSizes = new CopyOnWriteArrayList<>();
      AtomicInteger poisonAttempts = new AtomicInteger();
      Subscription sub =
          Subscription.builder("batched")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .batchSize(100)
              .failureHandler(
                  FailureHandler.retrying(
                      2, new Backoff(Duration.ofMillis(1), Duration.ofMillis(1), 1, 0)))
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .batchHandler(ds -> {
                    batchSizes.add(ds.size());
                    for (Delivery d : ds) {
                      if (d.message().header("seq").orElseThrow().equals("250")) {
                        poisonAttempts.incrementAndGet();
                        throw new IllegalStateException("poison");
                      }
                      Effects.apply(d.connection().orElseThrow(), "batched", d);
                    }
                  }));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 600 && s.inFlight() == 0);
      assertThat(fx.effects("batched")).as("every record but the poison one, once").isEqualTo(499);
      assertThat(fx.distinctEffects("batched")).isEqualTo(499);
      assertThat(s.stats().givenUp()).isEqualTo(1);
      assertThat(s.stats().duplicatesSuppressed()).isEqualTo(100);
      assertThat(batchSizes).as("real batches happened").anyMatch(n -> n > 1);
      assertThat(poisonAttempts.get()).as("once in its batch, then twice alone").isEqualTo(3);
      fx.effectOrder("batched")
          .forEach((key, seqs) -> assertThat(seqs).as("key " + key + " in order").isSorted());
    }
  }

  /**
   * Key-ordered batches: one partition's poll splits into batches of whole keys that run side by
   * side (here two of them are held inside the handler at once, which partition-serial batches
   * never allow), each key's records still applied in order and exactly once.
   */
  @Test
  void keyOrderedBatchesOfOnePartitionRunSideBySideAndKeepEachKeysOrder(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        ms.add(Effects.message(topic, "k" + (i % 40), i));
      }
      fx.publishAll(ms);
      java.util.concurrent.CountDownLatch twoInside = new java.util.concurrent.CountDownLatch(2);
      AtomicInteger batches = new AtomicInteger();
      Subscription sub =
          Subscription.builder("key-batches")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .batchSize(50)
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .batchHandler(ds -> {
                    if (batches.incrementAndGet() <= 2) {
                      twoInside.countDown();
                      Effects.awaitQuietly(twoInside); // the first two batches meet here
                    }
                    for (Delivery d : ds) {
                      Effects.apply(d.connection().orElseThrow(), "key-batches", d);
                    }
                  }));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 400 && s.inFlight() == 0);
      assertThat(twoInside.getCount()).as("two batches of one partition at once").isZero();
      assertThat(fx.effects("key-batches")).isEqualTo(400);
      assertThat(fx.distinctEffects("key-batches")).isEqualTo(400);
      Map<String, List<Long>> order = fx.effectOrder("key-batches");
      assertThat(order).hasSize(40);
      order.forEach((key, seqs) -> assertThat(seqs).as("key " + key + " in order").isSorted());
    }
  }

  @Test
  void anOlderEventNeverOverwritesNewerState(PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("prices", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      // versions of one product arrive out of order: 1, 3, 2 (stale), 3 (stale), 4
      for (long v : new long[] {1, 3, 2, 3, 4}) {
        fx.publish(Effects.message(topic, "product-1", v), null);
      }
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("pricing")
                          .topics(topic)
                          .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                          .build())
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .handler(d -> {
                    long version = Long.parseLong(d.message().header("seq").orElseThrow());
                    if (d.advanceVersion("product:" + d.message().key().orElseThrow(), version)) {
                      Effects.apply(d.connection().orElseThrow(), "pricing", d);
                    }
                  }));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 5 && s.inFlight() == 0);
      assertThat(fx.effectOrder("pricing").get("product-1")).containsExactly(1L, 3L, 4L);
      assertThat(s.stats().staleSkipped()).isEqualTo(2);
    }
  }

  @Test
  void unknownTypesAreIgnoredAndCountedAndForeignTenantsAreRejected(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("mixed", 1);
    EventTypes types =
        EventTypes.builder().register("order.created", 1, OrderCreated.class).build();
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      fx.publish(tenant(Effects.message(topic, "a", 1), "acme"), null);
      fx.publish(
          Message.builder(topic, "order.shipped").key("a").tenant("acme").jsonPayload("{}").build(),
          null);
      fx.publish(
          Message.builder(topic, "order.shipped").key("b").tenant("acme").jsonPayload("{}").build(),
          null);
      fx.publish(tenant(Effects.message(topic, "c", 2), "evil"), null); // not allowed
      fx.publish(Effects.message(topic, "d", 3), null); // no tenant
      // a known type with an extra, unknown field still decodes
      fx.publish(
          Message.builder(topic, "order.created")
              .key("e")
              .tenant("acme")
              .header("seq", "4")
              .jsonPayload("{\"key\":\"e\",\"seq\":4,\"addedLater\":true}")
              .build(),
          null);
      List<OrderCreated> handled = new CopyOnWriteArrayList<>();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("strict")
                          .topics(topic)
                          .eventTypes(types)
                          .allowedTenants(Set.of("acme"))
                          .build())
                  .handler(d -> handled.add(d.event(OrderCreated.class))));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 6 && s.inFlight() == 0);
      assertThat(handled) // different keys run concurrently: any order
          .containsExactlyInAnyOrder(new OrderCreated("a", 1), new OrderCreated("e", 4));
      assertThat(s.stats().unknownTypes()).isEqualTo(2);
      assertThat(s.stats().rejected()).isEqualTo(2);
      assertThat(s.stats().givenUp()).isEqualTo(2);
    }
  }

  private static Message tenant(Message m, String tenant) {
    return m.toBuilder().tenant(tenant).build();
  }

  @Test
  void anInboxRetentionShorterThanTheTopicsIsRefusedUnlessForcedAndOldRecordsArePurged(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 1, Map.of("retention.ms", "3600000"));
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      InboxStore inbox = PostgresInboxStore.create(ctx.dataSource());
      Subscription shortLived =
          Subscription.builder("short")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .inboxRetention(Duration.ofMillis(1))
              .build();
      KafkaSubscriber refused =
          KafkaSubscriber.builder(ctx.bootstrapServers(), shortLived)
              .inbox(inbox)
              .handler(d -> {})
              .build();
      assertThatThrownBy(refused::start)
          .isInstanceOf(InboxRetentionTooShortException.class)
          .hasMessageContaining("PT1H")
          .hasMessageContaining("applied twice");

      fx.publishAll(List.of(Effects.message(topic, "k", 1), Effects.message(topic, "k", 2)));
      KafkaSubscriber forced =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), shortLived)
                  .inbox(inbox)
                  .forceInboxRetention(true)
                  .inboxPurgeInterval(Duration.ofMillis(100))
                  .handler(d -> Effects.apply(d.connection().orElseThrow(), "short", d)));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("short") == 2);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> fx.count("SELECT count(*) FROM postbox_inbox WHERE consumer = 'short'") == 0);
      assertThat(forced.stats().applied()).isEqualTo(2);

      Subscription longEnough =
          Subscription.builder("long")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .inboxRetention(Duration.ofHours(1))
              .build();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), longEnough)
              .inbox(inbox)
              .handler(d -> {}));
    }
  }

  @Test
  void partitionOrderingRunsOneRecordAtATimePerPartitionInOffsetOrder(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 3);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 600; i++) {
        ms.add(
            Effects.message(topic, "k" + i, i)); // all keys differ: KEY ordering would overlap them
      }
      fx.publishAll(ms);
      Map<Integer, AtomicInteger> running = new java.util.concurrent.ConcurrentHashMap<>();
      Map<Integer, List<Long>> offsets = new java.util.concurrent.ConcurrentHashMap<>();
      AtomicInteger overlaps = new AtomicInteger();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("by-partition")
                          .topics(topic)
                          .ordering(dev.postbox.core.consumer.Ordering.PARTITION)
                          .concurrency(16)
                          .build())
                  .handler(d -> {
                    AtomicInteger r =
                        running.computeIfAbsent(d.partition(), p -> new AtomicInteger());
                    if (r.incrementAndGet() > 1) {
                      overlaps.incrementAndGet();
                    }
                    Thread.yield();
                    offsets
                        .computeIfAbsent(d.partition(), p -> new CopyOnWriteArrayList<>())
                        .add(d.offset());
                    r.decrementAndGet();
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == 600);
      assertThat(overlaps.get()).isZero();
      offsets.forEach((p, list) -> assertThat(list).as("partition " + p).isSorted());
      assertThat(offsets.values().stream().mapToInt(List::size).sum()).isEqualTo(600);
    }
  }
}
