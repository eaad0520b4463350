package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.QueueLag;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.time.FakeTime;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresConsumerAgeStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

/**
 * {@link RabbitLagProbe} against a real RabbitMQ node: the ready messages of a subscription's shard
 * queues after publishing with nobody consuming (stalled), and the consumer and the drained queues
 * once a subscriber runs; a subscription that never started has no queues to report; the age of the
 * oldest unfinished message from a subscriber in this process, on an injected clock, and from the
 * store it reports to, for a probe without the subscriber.
 */
@PostboxTest
class RabbitLagProbeIT {

  private static final int SHARDS = 2;
  private static final int TOTAL = 30;

  @Test
  void readsReadyMessagesWithoutConsumerThenTheConsumerOnceOneRuns() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "lag-" + UUID.randomUUID();
    String name = "lag-" + UUID.randomUUID().toString().substring(0, 8);
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    try (Connection c = f.newConnection()) {
      RabbitTopology.declareShards(c.createChannel(), name, topic, SHARDS);
    }
    publish(server, topic);
    try (RabbitLagProbe probe =
        RabbitLagProbe.builder(server.uri())
            .subscription(name, SHARDS, topic)
            .subscription("never-started-" + UUID.randomUUID(), SHARDS, topic)
            .build()) {
      List<QueueLag> before = probe.read();
      assertThat(before)
          .extracting(QueueLag::queue)
          .containsExactly(
              RabbitTopology.queue(name, topic, 0), RabbitTopology.queue(name, topic, 1));
      assertThat(before.stream().mapToLong(QueueLag::messagesReady).sum()).isEqualTo(TOTAL);
      assertThat(before).allMatch(q -> q.consumers() == 0);
      assertThat(before.stream().filter(QueueLag::stalled)).isNotEmpty();

      AtomicInteger handled = new AtomicInteger();
      try (RabbitSubscriber s =
          RabbitSubscriber.builder(server.uri(), Subscription.builder(name).topics(topic).build())
              .shards(SHARDS)
              .handler(d -> handled.incrementAndGet())
              .build()) {
        s.start();
        await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == TOTAL);
        List<QueueLag> after = probe.read();
        assertThat(after).allMatch(q -> q.consumers() == 1 && q.messagesReady() == 0);
        assertThat(after).noneMatch(QueueLag::stalled);
      }
      assertThat(handled).hasValue(TOTAL);
    }
  }

  /**
   * The age of the oldest message, read from the subscriber running here: 0 while idle; with a
   * handler that hangs and messages waiting (prefetch 2, 3 of 5 still ready), the age of the
   * relay's publish timestamp, growing as the injected clock moves, and stalled past {@code
   * stalledAfter}; the broker's counts alone (a probe without the subscriber) cannot tell.
   */
  @Test
  void readsTheOldestUnfinishedAgeIdleThenGrowingWhileTheHandlerHangs() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "age-" + UUID.randomUUID();
    String name = "age-" + UUID.randomUUID().toString().substring(0, 8);
    FakeTime time = FakeTime.startingAt(Instant.now().truncatedTo(ChronoUnit.SECONDS));
    Map<String, DoubleSupplier> gauges = new ConcurrentHashMap<>();
    CountDownLatch release = new CountDownLatch(1);
    try (RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), Subscription.builder(name).topics(topic).build())
            .shards(1)
            .prefetch(2)
            .clock(time.clock())
            .metrics(gauges(gauges))
            .handler(d -> {
              if (!release.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
              }
            })
            .build()) {
      s.start();
      String queue = RabbitTopology.queue(name, topic, 0);
      DoubleSupplier gauge =
          gauges.get(MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE.name() + "/" + topic + "/0");
      try (AutoCloseable releaseFirst = release::countDown;
          RabbitLagProbe probe =
              RabbitLagProbe.builder(server.uri())
                  .subscription(name, 1, topic)
                  .subscriber(s)
                  .stalledAfter(Duration.ofSeconds(60))
                  .ticker(time)
                  .build()
                  .bindTo(gauges(gauges));
          RabbitLagProbe outside =
              RabbitLagProbe.builder(server.uri()).subscription(name, 1, topic).build()) {
        await().atMost(Duration.ofSeconds(60)).until(() -> probe.read().get(0).consumers() == 1);
        QueueLag idle = probe.read().get(0);
        assertThat(idle.oldestUnfinishedAge()).contains(Duration.ZERO);
        assertThat(idle.idle()).isTrue();
        assertThat(idle.stalled()).isFalse();
        assertThat(gauge.getAsDouble()).isZero();

        publish(server, topic, 5, time.clock());
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> s.inFlight() == 2 && probe.read().get(0).messagesReady() == 3);
        time.advance(Duration.ofSeconds(30));
        QueueLag working = probe.read().get(0);
        assertThat(working.queue()).isEqualTo(queue);
        assertThat(working.oldestUnfinishedAge()).contains(Duration.ofSeconds(30));
        assertThat(working.idle()).isFalse();
        assertThat(working.stalled()).isFalse();
        assertThat(s.oldestUnfinishedAges()).containsEntry(queue, Duration.ofSeconds(30));
        assertThat(gauge.getAsDouble()).isEqualTo(30.0);

        DoubleSupplier stalledGauge =
            gauges.get(MetricName.QUEUE_STALLED.name() + "/" + topic + "/0");
        assertThat(stalledGauge.getAsDouble()).as("30 s: working").isZero();
        time.advance(Duration.ofSeconds(60));
        assertThat(stalledGauge.getAsDouble()).isEqualTo(1.0);
        assertThat(gauges.get(MetricName.QUEUE_READY.name() + "/" + topic + "/0").getAsDouble())
            .isEqualTo(3.0);
        assertThat(gauges.get(MetricName.QUEUE_CONSUMERS.name() + "/" + topic + "/0").getAsDouble())
            .isEqualTo(1.0);
        QueueLag stalled = probe.read().get(0);
        assertThat(stalled.oldestUnfinishedAge()).contains(Duration.ofSeconds(90));
        assertThat(stalled.messagesReady()).isEqualTo(3);
        assertThat(stalled.consumers()).isEqualTo(1);
        assertThat(stalled.stalled()).isTrue();
        QueueLag brokerOnly = outside.read().get(0);
        assertThat(brokerOnly.oldestUnfinishedAge()).isEmpty();
        assertThat(brokerOnly.stalled()).as("a consumer is subscribed: not visible").isFalse();

        release.countDown();
        await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == 5);
        await().atMost(Duration.ofSeconds(30)).until(() -> probe.read().get(0).idle());
        assertThat(probe.read().get(0).oldestUnfinishedAge()).contains(Duration.ZERO);
        assertThat(gauge.getAsDouble()).isZero();
      }
    } finally {
      release.countDown();
    }
  }

  /**
   * The same readings from a probe in another process's place: no subscriber given, the ages read
   * from the store the subscriber reports to (PostgreSQL): idle while nothing waits; with a handler
   * that hangs, the age of the head as the injected clock moves, and stalled past {@code
   * stalledAfter} though a consumer is subscribed; idle again once released; unknown (and not idle)
   * once the subscriber closed and its reports are gone.
   */
  @Test
  void aProbeWithoutTheSubscriberReadsTheAgeAndTheStallFromTheStore(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    PostboxMigrations.migrate(ctx.dataSource());
    String topic = "age-store-" + UUID.randomUUID();
    String name = "age-store-" + UUID.randomUUID().toString().substring(0, 8);
    FakeTime time = FakeTime.startingAt(Instant.now().truncatedTo(ChronoUnit.SECONDS));
    CountDownLatch release = new CountDownLatch(1);
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), Subscription.builder(name).topics(topic).build())
            .shards(1)
            .prefetch(2)
            .clock(time.clock())
            .ageStore(PostgresConsumerAgeStore.create(ctx.newDataSource(2)))
            .ageReportInterval(Duration.ofMillis(100))
            .handler(d -> {
              if (!release.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
              }
            })
            .build();
    try (AutoCloseable closeLast = s;
        AutoCloseable releaseFirst = release::countDown;
        RabbitLagProbe elsewhere =
            RabbitLagProbe.builder(server.uri())
                .subscription(name, 1, topic)
                .ages(PostgresConsumerAgeStore.create(ctx.newDataSource(2)))
                .stalledAfter(Duration.ofSeconds(60))
                .clock(time.clock())
                .build()) {
      s.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> elsewhere.read().get(0).idle());
      QueueLag idle = elsewhere.read().get(0);
      assertThat(idle.oldestUnfinishedAge()).contains(Duration.ZERO);
      assertThat(idle.consumers()).isEqualTo(1);
      assertThat(idle.stalled()).isFalse();

      publish(server, topic, 5, time.clock());
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.inFlight() == 2 && elsewhere.read().get(0).messagesReady() == 3);
      time.advance(Duration.ofSeconds(30));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              elsewhere
                  .read()
                  .get(0)
                  .oldestUnfinishedAge()
                  .equals(Optional.of(Duration.ofSeconds(30))));
      QueueLag working = elsewhere.read().get(0);
      assertThat(working.idle()).isFalse();
      assertThat(working.stalled()).as("30 s, below stalledAfter: working").isFalse();

      time.advance(Duration.ofSeconds(60));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              elsewhere
                  .read()
                  .get(0)
                  .oldestUnfinishedAge()
                  .equals(Optional.of(Duration.ofSeconds(90))));
      QueueLag stalled = elsewhere.read().get(0);
      assertThat(stalled.stalled()).as("a hung handler holds the head").isTrue();
      assertThat(stalled.consumers()).isEqualTo(1);
      assertThat(stalled.messagesReady()).isEqualTo(3);

      release.countDown();
      await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == 5);
      await().atMost(Duration.ofSeconds(30)).until(() -> elsewhere.read().get(0).idle());
      assertThat(elsewhere.read().get(0).stalled()).isFalse();

      s.close();
      QueueLag gone = elsewhere.read().get(0);
      assertThat(gone.oldestUnfinishedAge()).as("its reports removed at close: unknown").isEmpty();
      assertThat(gone.idle()).as("unknown is not idle").isFalse();
    } finally {
      release.countDown();
    }
  }

  /** Metrics that keep each gauge as {@code NAME/topic/partition}. */
  private static PostboxMetrics gauges(Map<String, DoubleSupplier> into) {
    return new PostboxMetrics() {
      @Override
      public Counter counter(MetricName name, Tags tags) {
        return n -> {};
      }

      @Override
      public Timer timer(MetricName name, Tags tags) {
        return d -> {};
      }

      @Override
      public void gauge(MetricName name, Tags tags, DoubleSupplier value) {
        Map<String, String> t = tags.asMap();
        into.putIfAbsent(name.name() + "/" + t.get("topic") + "/" + t.get("partition"), value);
      }
    };
  }

  private static void publish(RabbitMqServer server, String topic, int n, Clock clock)
      throws InterruptedException {
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ms.add(Message.builder(topic, "order.created").key("k-" + i).jsonPayload("{}").build());
    }
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).clock(clock).build()) {
      assertThat(p.publish(ms)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }

  private static void publish(RabbitMqServer server, String topic) throws InterruptedException {
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < TOTAL; i++) {
      ms.add(
          Message.builder(topic, "order.created")
              .key("key-" + (i % 5))
              .jsonPayload("{\"n\":" + i + "}")
              .build());
    }
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      assertThat(p.publish(ms)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }
}
