package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.ReplayHeaders;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Consume-transform-produce against the real broker: a {@code read_committed} reader of the output
 * topic sees each input's output exactly once, across a crash inside the transaction and across
 * aborted batches; poison inputs go to the dead letters, once each.
 */
@PostboxTest
class TransformerIT {

  /**
   * Emits one output per input, naming the input's id and seq; the transform throws while {@code
   * failNext} counts down above 0.
   */
  static KafkaTransformer transformer(
      String bootstrap,
      String in,
      String out,
      String group,
      String transactionalId,
      AtomicInteger failNext) {
    return builder(bootstrap, in, out, group, transactionalId, failNext).build();
  }

  static KafkaTransformer.Builder builder(
      String bootstrap,
      String in,
      String out,
      String group,
      String transactionalId,
      AtomicInteger failNext) {
    Subscription sub =
        Subscription.builder(group)
            .topics(in)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    return KafkaTransformer.builder(bootstrap, sub)
        .transactionalId(transactionalId)
        .maxBatch(50)
        .transform((input, emit) -> {
          if (failNext.getAndDecrement() > 0) {
            throw new IllegalStateException("transform fails on purpose");
          }
          emit.emit(
              Message.builder(out, "order.enriched")
                  .key(input.key().orElseThrow())
                  .header("input", input.id().toString())
                  .header("seq", input.header("seq").orElseThrow())
                  .jsonPayload("{}")
                  .build());
        });
  }

  @Test
  void aCrashMidTransactionLeavesEachOutputExactlyOnceForReadCommitted(PostboxTestContext ctx)
      throws Exception {
    String in = ctx.topic("orders", 2);
    String out = ctx.topic("enriched", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        ms.add(Effects.message(in, "k" + (i % 20), i));
      }
      fx.publishAll(ms);
      try (ChildJvm child =
          ChildJvm.builder(TransformerChildMain.class)
              .args(ctx.bootstrapServers(), in, out, "enricher", "enricher-1")
              .systemProperty(CrashPoints.PROPERTY, CrashPoints.TRANSFORM_BEFORE_COMMIT + "@3")
              .start()) {
        assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      }
      // the successor takes the same transactional.id: the crashed transaction is aborted at once
      try (KafkaTransformer t =
          builder(ctx.bootstrapServers(), in, out, "enricher", "enricher-1", new AtomicInteger(-1))
              .consumerProperty("max.poll.interval.ms", 10_000)
              .build()) {
        t.start();
        Map<String, Integer> seen = readCommitted(ctx, out, 500);
        assertThat(seen).hasSize(500);
        assertThat(seen.values()).as("each input's output exactly once").containsOnly(1);
      }
    }
  }

  @Test
  void failedBatchesAreAbortedAndRetriedWithoutDuplicates(PostboxTestContext ctx) throws Exception {
    String in = ctx.topic("orders", 1);
    String out = ctx.topic("enriched", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        ms.add(Effects.message(in, "k" + (i % 5), i));
      }
      fx.publishAll(ms);
      AtomicInteger failNext = new AtomicInteger(0);
      try (KafkaTransformer t =
          transformer(ctx.bootstrapServers(), in, out, "flaky", "flaky-1", failNext)) {
        failNext.set(3); // the first batch fails three times (some outputs already sent)
        t.start();
        Map<String, Integer> seen = readCommitted(ctx, out, 200);
        assertThat(seen).hasSize(200);
        assertThat(seen.values()).containsOnly(1);
        assertThat(t.aborted()).isGreaterThanOrEqualTo(1);
        assertThat(t.records()).isEqualTo(200);
      }
    }
  }

  @Test
  void poisonInputsAreDeadLetteredOnceAndTheirBatchesCommitWithoutThem(PostboxTestContext ctx)
      throws Exception {
    String in = ctx.topic("orders", 1);
    String out = ctx.topic("enriched", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        ms.add(Effects.message(in, "k" + (i % 5), i));
      }
      fx.publishAll(ms.subList(0, 50));
      fx.sendRaw(
          in,
          "k0".getBytes(StandardCharsets.UTF_8),
          "not a postbox message".getBytes(StandardCharsets.UTF_8)); // offset 50
      fx.publishAll(ms.subList(50, 100));
      DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
      AtomicInteger transientTries = new AtomicInteger();
      Subscription sub =
          Subscription.builder("poisoned")
              .topics(in)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .build();
      try (KafkaTransformer t =
          KafkaTransformer.builder(ctx.bootstrapServers(), sub)
              .transactionalId("poisoned-1")
              .maxBatch(50)
              .deadLetters(store)
              .maxAttempts(3)
              .backoff(new Backoff(Duration.ofMillis(10), Duration.ofMillis(50), 2, 0))
              .transform((input, emit) -> {
                long seq = Long.parseLong(input.header("seq").orElseThrow());
                if (seq == 17) {
                  throw new PermanentMessageException("poison input " + seq);
                }
                if (seq == 63) {
                  transientTries.incrementAndGet();
                  throw new IllegalStateException("input " + seq + " always fails");
                }
                emit.emit(
                    Message.builder(out, "order.enriched")
                        .key(input.key().orElseThrow())
                        .header("input", input.id().toString())
                        .jsonPayload("{}")
                        .build());
              })
              .build()) {
        t.start();
        Map<String, Integer> seen = readCommitted(ctx, out, 98);
        assertThat(seen).hasSize(98).doesNotContainKeys(ms.get(17).id().toString());
        assertThat(seen).doesNotContainKeys(ms.get(63).id().toString());
        assertThat(seen.values()).as("each other input's output exactly once").containsOnly(1);
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> t.records() >= 101); // the batch with the last poison committed too
      }
      List<DeadLetterStore.DeadLetter> letters =
          store.query(DeadLetterStore.Query.all(100)).stream()
              .filter(d -> d.letter().consumer().equals("poisoned"))
              .sorted(java.util.Comparator.comparingLong(d -> d.letter().offset()))
              .toList();
      assertThat(letters).as("one dead letter per poison input").hasSize(3);
      assertThat(letters.get(0).letter().offset()).isEqualTo(17);
      assertThat(letters.get(0).letter().messageId()).contains(ms.get(17).id());
      assertThat(letters.get(0).letter().classification()).isEqualTo(Classification.PERMANENT);
      assertThat(letters.get(1).letter().offset()).isEqualTo(50);
      assertThat(letters.get(1).letter().messageId()).as("undecodable").isEmpty();
      assertThat(letters.get(1).letter().classification()).isEqualTo(Classification.PERMANENT);
      assertThat(letters.get(2).letter().offset()).isEqualTo(64); // seq 63 after the raw record
      assertThat(letters.get(2).letter().messageId()).contains(ms.get(63).id());
      assertThat(letters.get(2).letter().classification())
          .isEqualTo(Classification.RETRIES_EXHAUSTED);
      assertThat(letters.get(2).letter().attempts()).isEqualTo(3);
      assertThat(transientTries.get()).isGreaterThanOrEqualTo(3);
      // the letter reads back into the message it carried (dlq replay works on it)
      assertThat(KafkaDeadLetters.message(letters.get(0)).id()).isEqualTo(ms.get(17).id());
    }
  }

  @Test
  void aReplayedDeadLetterOfAnotherConsumerIsPassedOverWithoutOutput(PostboxTestContext ctx)
      throws Exception {
    String in = ctx.topic("orders", 1);
    String out = ctx.topic("enriched", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Message ordinary = Effects.message(in, "k0", 0);
      Message forOther = replayFor(Effects.message(in, "k0", 1), "billing");
      Message forThis = replayFor(Effects.message(in, "k0", 2), "enricher");
      fx.publishAll(List.of(ordinary, forOther, forThis));
      try (KafkaTransformer t =
          transformer(
              ctx.bootstrapServers(), in, out, "enricher", "enricher-1", new AtomicInteger())) {
        t.start();
        // in one partition, in order: an output of forOther would be committed before forThis's
        assertThat(readCommitted(ctx, out, 2).keySet())
            .containsExactlyInAnyOrder(ordinary.id().toString(), forThis.id().toString());
      }
    }
  }

  private static Message replayFor(Message m, String consumer) {
    return m.toBuilder()
        .header(ReplayHeaders.DEAD_LETTER, "17")
        .header(ReplayHeaders.REPLAYED_BY, "alice")
        .header(ReplayHeaders.TARGET, consumer)
        .build();
  }

  /** Reads {@code topic} read_committed until {@code expected} distinct inputs were seen. */
  private static Map<String, Integer> readCommitted(
      PostboxTestContext ctx, String topic, int expected) {
    Map<String, Object> p = new HashMap<>();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + topic);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    Map<String, Integer> seen = new HashMap<>();
    try (KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      c.subscribe(List.of(topic));
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
              String input = KafkaRecords.fromRecord(r).header("input").orElseThrow();
              seen.merge(input, 1, Integer::sum);
            }
            return seen.size() >= expected;
          });
      // and nothing more arrives behind them (a duplicate would come after the first copies)
      for (int i = 0; i < 5; i++) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          seen.merge(KafkaRecords.fromRecord(r).header("input").orElseThrow(), 1, Integer::sum);
        }
      }
    }
    return seen;
  }
}
