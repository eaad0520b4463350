package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

@PostboxTest
class RetryTopicsIT extends Subscribers {

  /** No in-place retries: every transient failure goes straight to the retry topics. */
  private static Subscription.Builder subscription(String name, String topic) {
    return Subscription.builder(name)
        .topics(topic)
        .failureHandler((d, e) -> new FailureDecision.GiveUp("no in-place retries", false));
  }

  @Test
  void aMessageThatFailsTwiceIsAppliedOnceThroughTheRetryTiersWhileOthersFlow(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Message flaky = Effects.message(topic, "flaky", 0);
      List<Message> ms = new ArrayList<>();
      ms.add(flaky);
      for (int i = 1; i <= 50; i++) {
        ms.add(Effects.message(topic, "healthy-" + (i % 10), i));
      }
      fx.publishAll(ms);
      AtomicInteger failures = new AtomicInteger();
      Queue<String> flakyAttempts = new ConcurrentLinkedQueue<>();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), subscription("rt", topic).build())
                  .retryTopics(Duration.ofMillis(300), Duration.ofMillis(300))
                  .handler(d -> {
                    if (d.message().key().orElseThrow().equals("flaky")) {
                      flakyAttempts.add(d.topic() + "#" + d.attempt());
                      if (failures.incrementAndGet() <= 2) {
                        throw new IllegalStateException("dependency timed out");
                      }
                    }
                    fx.applyAutoCommit("rt", d);
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("rt") == 51);
      Thread.sleep(1_000); // nothing more may arrive
      assertThat(fx.effects("rt")).isEqualTo(51);
      assertThat(fx.count("SELECT count(*) FROM effect WHERE msg_key = 'flaky'")).isEqualTo(1);
      assertThat(flakyAttempts)
          .as("applied with the original topic, attempts numbered by tier")
          .containsExactly(topic + "#1", topic + "#2", topic + "#3");
      assertThat(
              fx.count(
                  "SELECT count(*) FROM effect WHERE msg_key <> 'flaky' AND n > (SELECT n FROM"
                      + " effect WHERE msg_key = 'flaky')"))
          .as("the trade-off: later messages were applied before the retried one")
          .isZero();
      ProducerRecord<byte[], byte[]> original = KafkaRecords.toRecord(flaky);
      for (int tier = 1; tier <= 2; tier++) {
        List<ConsumerRecord<byte[], byte[]>> rs =
            read(ctx, RetryTopicNames.retryTopic(topic, "rt", tier), 1);
        assertThat(rs).hasSize(1);
        ConsumerRecord<byte[], byte[]> r = rs.get(0);
        assertThat(r.key()).isEqualTo(original.key());
        assertThat(r.value()).isEqualTo(original.value());
        assertThat(header(r, KafkaRetryTopics.ATTEMPT)).isEqualTo(Integer.toString(tier));
        assertThat(header(r, KafkaRetryTopics.ORIGIN)).matches(topic + "-[01]@0");
        assertThat(header(r, KafkaRetryTopics.SUBSCRIPTION)).isEqualTo("rt");
        assertThat(header(r, KafkaRetryTopics.ERROR)).contains("dependency timed out");
        Instant.parse(header(r, KafkaRetryTopics.FIRST_FAILURE));
        Instant.parse(header(r, KafkaRetryTopics.DUE));
      }
      assertThat(s.stats().retries()).isEqualTo(1); // tier 1 → tier 2
      assertThat(s.stats().unparked()).as("retry topics are not parking").isZero();
      assertThat(s.stats().parked()).isZero();
      assertThat(s.stats().applied()).isEqualTo(51);
    }
  }

  @Test
  void aMessageThatAlwaysFailsLandsOnTheDltByteIdenticalWithItsOrigin(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Message doomed = Effects.message(topic, "doomed", 0);
      fx.publishAll(List.of(doomed, Effects.message(topic, "healthy", 1)));
      DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
      AtomicInteger calls = new AtomicInteger();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), subscription("doom", topic).build())
              .retryTopics(Duration.ofMillis(200), Duration.ofMillis(200))
              .deadLetters(store)
              .handler(d -> {
                if (d.message().key().orElseThrow().equals("doomed")) {
                  calls.incrementAndGet();
                  throw new IllegalStateException("always down");
                }
                fx.applyAutoCommit("doom", d);
              }));
      List<ConsumerRecord<byte[], byte[]>> dlt =
          read(ctx, RetryTopicNames.deadLetterTopic(topic, "doom"), 1);
      assertThat(dlt).hasSize(1);
      ConsumerRecord<byte[], byte[]> r = dlt.get(0);
      ProducerRecord<byte[], byte[]> original = KafkaRecords.toRecord(doomed);
      assertThat(r.key()).isEqualTo(original.key());
      assertThat(r.value()).isEqualTo(original.value());
      List<Header> originalHeaders = List.of(original.headers().toArray());
      List<Header> got = List.of(r.headers().toArray());
      for (int i = 0; i < originalHeaders.size(); i++) {
        assertThat(got.get(i).key()).isEqualTo(originalHeaders.get(i).key());
        assertThat(got.get(i).value()).isEqualTo(originalHeaders.get(i).value());
      }
      assertThat(header(r, KafkaRetryTopics.ORIGIN)).isEqualTo(topic + "-0@0");
      assertThat(header(r, KafkaRetryTopics.ATTEMPT)).isEqualTo("2");
      assertThat(header(r, KafkaRetryTopics.ERROR)).contains("always down");
      assertThat(Instant.parse(header(r, KafkaRetryTopics.FIRST_FAILURE))).isBefore(Instant.now());
      assertThat(calls.get()).isEqualTo(3);
      assertThat(fx.effects("doom")).isEqualTo(1);
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> store.query(DeadLetterStore.Query.all(10)).size() == 1);
      DeadLetter dl = store.query(DeadLetterStore.Query.all(10)).get(0);
      assertThat(dl.letter().topic()).isEqualTo(topic);
      assertThat(dl.letter().partition()).isZero();
      assertThat(dl.letter().offset()).isZero();
      assertThat(dl.letter().value()).isEqualTo(original.value());
      assertThat(dl.letter().classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
      assertThat(dl.letter().attempts()).isEqualTo(3);
      assertThat(dl.letter().headers())
          .extracting(DeadLetterStore.Header::name)
          .noneMatch(n -> n.startsWith("pb_retry_"));
    }
  }

  @Test
  void forgedRetryHeadersCannotStallSkipOrLoop(PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Queue<String> attempts = new ConcurrentLinkedQueue<>();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), subscription("forged", topic).build())
              .retryTopics(Duration.ofSeconds(1), Duration.ofSeconds(1))
              .handler(d -> {
                String key = d.message().key().orElseThrow();
                attempts.add(key + "#" + d.attempt());
                if (key.equals("forged-fail")) {
                  throw new IllegalStateException("still down");
                }
                fx.applyAutoCommit("forged", d);
              }));
      // the subscriber created its retry topics at start
      String retry1 = RetryTopicNames.retryTopic(topic, "forged", 1);
      send(ctx, retry1, Effects.message(topic, "forged-ok", 1), "-1", "3000-01-01T00:00:00Z");
      send(
          ctx,
          retry1,
          Effects.message(topic, "forged-fail", 2),
          "2147483648",
          "3000-01-01T00:00:00Z");
      send(ctx, topic, Effects.message(topic, "main", 3), "99", "3000-01-01T00:00:00Z");
      long t0 = System.nanoTime();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> fx.count("SELECT count(*) FROM effect WHERE msg_key = 'forged-ok'") == 1);
      assertThat(Duration.ofNanos(System.nanoTime() - t0))
          .as("a due time in the year 3000 is clamped to the tier's delay")
          .isLessThan(Duration.ofSeconds(20));
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> fx.count("SELECT count(*) FROM effect WHERE msg_key = 'main'") == 1);
      List<ConsumerRecord<byte[], byte[]>> dlt =
          read(ctx, RetryTopicNames.deadLetterTopic(topic, "forged"), 1);
      assertThat(dlt).hasSize(1);
      assertThat(header(dlt.get(0), KafkaRetryTopics.ATTEMPT)).isEqualTo("2");
      assertThat(headers(dlt.get(0), KafkaRetryTopics.ATTEMPT))
          .as("replaced, not added")
          .hasSize(1);
      Thread.sleep(2_000); // no loop: nothing more happens
      assertThat(attempts)
          .as("attempts follow the tier of the topic read, whatever the headers say")
          .containsExactlyInAnyOrder("forged-ok#2", "forged-fail#2", "forged-fail#3", "main#1");
    }
  }

  @Test
  void parkingAndRetryTopicsAreAlternatives(PostboxTestContext ctx) {
    String topic = ctx.topic("orders", 1);
    dev.postbox.jdbc.PostboxMigrations.migrate(ctx.dataSource());
    assertThatThrownBy(() ->
            KafkaSubscriber.builder(ctx.bootstrapServers(), subscription("both", topic).build())
                .handler(d -> {})
                .retryTopics(Duration.ofSeconds(1))
                .parking(dev.postbox.jdbc.PostgresParkingStore.create(ctx.dataSource()))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("alternatives");
  }

  // ---------------------------------------------------------------- helpers

  private static void send(
      PostboxTestContext ctx, String target, Message m, String attempt, String due)
      throws Exception {
    ProducerRecord<byte[], byte[]> base = KafkaRecords.toRecord(m);
    ProducerRecord<byte[], byte[]> r =
        new ProducerRecord<>(target, null, base.key(), base.value(), base.headers());
    r.headers().add(KafkaRetryTopics.ATTEMPT, attempt.getBytes(StandardCharsets.UTF_8));
    r.headers().add(KafkaRetryTopics.DUE, due.getBytes(StandardCharsets.UTF_8));
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.send(r).get();
    }
  }

  /** Reads {@code topic} from the beginning until {@code n} records arrived (or 60 s passed). */
  private static List<ConsumerRecord<byte[], byte[]>> read(
      PostboxTestContext ctx, String topic, int n) {
    Map<String, Object> c = new HashMap<>();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : consumer.partitionsFor(topic)) {
        tps.add(new TopicPartition(topic, pi.partition()));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (out.size() < n && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
      }
      consumer.poll(Duration.ofMillis(500)).forEach(out::add); // and nothing more
    }
    return out;
  }

  private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    Header h = r.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static List<Header> headers(ConsumerRecord<byte[], byte[]> r, String name) {
    List<Header> out = new ArrayList<>();
    r.headers().headers(name).forEach(out::add);
    return out;
  }
}
