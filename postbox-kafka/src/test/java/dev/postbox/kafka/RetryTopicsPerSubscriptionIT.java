package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Retry topics belong to one subscription: two subscriptions (consumer groups) of one topic never
 * retry each other's failures. Before, both read {@code <topic>.retry.N}, so a record one group
 * failed was applied a second time in the group where it had already succeeded.
 */
@PostboxTest
class RetryTopicsPerSubscriptionIT extends Subscribers {

  /** No in-place retries: every transient failure goes straight to the retry topics. */
  private static Subscription subscription(String name, String topic) {
    return Subscription.builder(name)
        .topics(topic)
        .failureHandler((d, e) -> new FailureDecision.GiveUp("no in-place retries", false))
        .build();
  }

  @Test
  void aFailureInOneGroupIsRetriedOnlyThereAndNotAppliedAgainInTheGroupWhereItSucceeded(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 2);
    String billing = "billing-" + suffix(topic);
    String shipping = "shipping-" + suffix(topic);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
      Queue<String> billingAttempts = new ConcurrentLinkedQueue<>();
      Queue<String> shippingAttempts = new ConcurrentLinkedQueue<>();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), subscription(billing, topic))
              .retryTopics(Duration.ofMillis(200), Duration.ofMillis(200))
              .deadLetters(store)
              .handler(d -> {
                String key = d.message().key().orElseThrow();
                billingAttempts.add(key + "#" + d.attempt());
                if (key.equals("flaky")) {
                  throw new IllegalStateException("billing's dependency timed out");
                }
                fx.applyAutoCommit(billing, d);
              }));
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), subscription(shipping, topic))
              .retryTopics(Duration.ofMillis(200), Duration.ofMillis(200))
              .deadLetters(store)
              .handler(d -> {
                shippingAttempts.add(d.message().key().orElseThrow() + "#" + d.attempt());
                fx.applyAutoCommit(shipping, d);
              }));
      Message flaky = Effects.message(topic, "flaky", 0);
      fx.publishAll(List.of(flaky, Effects.message(topic, "healthy", 1)));

      // billing's retries ran out: its dead letter is stored after the last tier
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> !store.query(DeadLetterStore.Query.all(10)).isEmpty());
      // and every retry consumer has read everything on the partitions it reads
      awaitCaughtUp(ctx, billing + ".retry", shipping + ".retry");

      assertThat(shippingAttempts)
          .as("shipping applied each record once, on its main path, and never billing's retries")
          .containsExactlyInAnyOrder("flaky#1", "healthy#1");
      assertThat(fx.count("SELECT count(*) FROM effect WHERE consumer = '" + shipping + "'"))
          .isEqualTo(2);
      assertThat(billingAttempts)
          .as("billing's failure was retried through its tiers by billing's handler")
          .containsExactlyInAnyOrder("flaky#1", "flaky#2", "flaky#3", "healthy#1");
      assertThat(fx.count("SELECT count(*) FROM effect WHERE consumer = '" + billing + "'"))
          .isEqualTo(1);
      List<DeadLetter> letters = store.query(DeadLetterStore.Query.all(10));
      assertThat(letters).hasSize(1);
      assertThat(letters.get(0).letter().consumer()).isEqualTo(billing);
      assertThat(letters.get(0).letter().attempts()).isEqualTo(3);

      Map<String, Long> records = records(ctx, topic);
      assertThat(records)
          .as("billing's own retry and dead-letter topics hold its failure; shipping's are empty")
          .containsEntry(topic + "." + billing + ".retry.1", 1L)
          .containsEntry(topic + "." + billing + ".retry.2", 1L)
          .containsEntry(topic + "." + billing + ".dlt", 1L)
          .containsEntry(topic + "." + shipping + ".retry.1", 0L)
          .containsEntry(topic + "." + shipping + ".retry.2", 0L)
          .containsEntry(topic + "." + shipping + ".dlt", 0L);
    }
  }

  /**
   * Upgrading: records an earlier version left in the shared {@code <topic>.retry.<n>} are drained
   * by a group that was reading them (from its committed offset, a renewed failure moving to its
   * own topics), and passed over by a group that never read them.
   */
  @Test
  void theEarlierSharedRetryTopicIsDrainedByTheGroupThatReadItAndPassedOverByANewOne(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 1);
    String billing = "billing-" + suffix(topic);
    String shipping = "shipping-" + suffix(topic);
    String shared = topic + ".retry.1";
    TopicPartition shared0 = new TopicPartition(shared, 0);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers());
        Admin admin = admin(ctx)) {
      ctx.kafka().createTopic(shared, 1);
      // as the earlier version left them: billing's retry group had read offset 0 before the stop
      fx.sendRaw(shared, null, new byte[0]);
      admin
          .alterConsumerGroupOffsets(billing + ".retry", Map.of(shared0, new OffsetAndMetadata(1)))
          .all()
          .get();
      for (String key : List.of("legacy-ok", "legacy-flaky")) {
        ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(Effects.message(topic, key, 7));
        r.headers().add(KafkaRetryTopics.ATTEMPT, utf8("1"));
        r.headers().add(KafkaRetryTopics.ORIGIN, utf8(topic + "-0@7"));
        r.headers().add(KafkaRetryTopics.DUE, utf8(Instant.now().toString()));
        fx.sendRaw(shared, r.key(), r.value(), r.headers());
      }
      Queue<String> billingAttempts = new ConcurrentLinkedQueue<>();
      Queue<String> shippingAttempts = new ConcurrentLinkedQueue<>();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), subscription(billing, topic))
              .retryTopics(Duration.ofMillis(200), Duration.ofMillis(200))
              .handler(d -> {
                String key = d.message().key().orElseThrow();
                billingAttempts.add(key + "#" + d.attempt());
                if (key.equals("legacy-flaky") && d.attempt() == 2) {
                  throw new IllegalStateException("still down");
                }
                fx.applyAutoCommit(billing, d);
              }));
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), subscription(shipping, topic))
              .retryTopics(Duration.ofMillis(200), Duration.ofMillis(200))
              .handler(d -> {
                shippingAttempts.add(d.message().key().orElseThrow() + "#" + d.attempt());
                fx.applyAutoCommit(shipping, d);
              }));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects(billing) == 2);
      awaitCaughtUp(ctx, billing + ".retry", shipping + ".retry");

      assertThat(billingAttempts)
          .containsExactlyInAnyOrder("legacy-ok#2", "legacy-flaky#2", "legacy-flaky#3");
      assertThat(fx.effects(billing)).isEqualTo(2);
      assertThat(records(ctx, topic))
          .as("the renewed failure went to billing's own next tier")
          .containsEntry(topic + "." + billing + ".retry.2", 1L)
          .containsEntry(shared, 3L);
      assertThat(shippingAttempts).as("shipping never read the shared topic").isEmpty();
      assertThat(fx.effects(shipping)).isZero();
      assertThat(fx.committedOffset(shipping + ".retry", shared, 0))
          .as("it starts at the end, committed")
          .isEqualTo(3);
    }
  }

  // ---------------------------------------------------------------- helpers

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String suffix(String topic) {
    return topic.substring(topic.lastIndexOf('-') + 1);
  }

  private static Admin admin(PostboxTestContext ctx) {
    Map<String, Object> p = new HashMap<>();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    return Admin.create(p);
  }

  /**
   * Waits until each group has members, and its committed offset on every partition assigned to
   * them is the partition's end: each has read and finished all it reads (no waiting on time).
   */
  private static void awaitCaughtUp(PostboxTestContext ctx, String... groups) {
    try (Admin admin = admin(ctx)) {
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> {
            for (String group : groups) {
              ConsumerGroupDescription g =
                  admin.describeConsumerGroups(List.of(group)).all().get().get(group);
              Set<TopicPartition> assigned = new HashSet<>();
              for (MemberDescription m : g.members()) {
                assigned.addAll(m.assignment().topicPartitions());
              }
              if (assigned.isEmpty()) {
                return false;
              }
              Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
              assigned.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
              Map<TopicPartition, ListOffsetsResultInfo> ends =
                  admin.listOffsets(latest).all().get();
              Map<TopicPartition, OffsetAndMetadata> committed =
                  admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
              for (TopicPartition tp : assigned) {
                long end = ends.get(tp).offset();
                OffsetAndMetadata c = committed.get(tp);
                if (end > 0 && (c == null || c.offset() < end)) {
                  return false;
                }
              }
            }
            return true;
          });
    }
  }

  /** Records in each topic whose name starts with {@code topic.} (sum over partitions). */
  private static Map<String, Long> records(PostboxTestContext ctx, String topic) throws Exception {
    try (Admin admin = admin(ctx)) {
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (var e :
          admin
              .describeTopics(
                  admin.listTopics().names().get().stream()
                      .filter(t -> t.startsWith(topic + "."))
                      .toList())
              .allTopicNames()
              .get()
              .entrySet()) {
        e.getValue()
            .partitions()
            .forEach(p ->
                latest.put(new TopicPartition(e.getKey(), p.partition()), OffsetSpec.latest()));
      }
      Map<String, Long> out = new HashMap<>();
      admin
          .listOffsets(latest)
          .all()
          .get()
          .forEach((tp, info) -> out.merge(tp.topic(), info.offset(), Long::sum));
      return out;
    }
  }
}
