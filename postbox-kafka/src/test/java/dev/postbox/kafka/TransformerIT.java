package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
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
 * aborted batches.
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
