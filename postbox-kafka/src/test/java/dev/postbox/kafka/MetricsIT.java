package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/** Each metric moves as it should, against real PostgreSQL and Kafka. */
@PostboxTest
class MetricsIT extends Subscribers {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @Test
  void aDuplicateIncrementsTheSuppressedCounterAndNothingElse(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    RecordingMetrics metrics = new RecordingMetrics();
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Subscription sub =
          Subscription.builder("inventory")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .build();
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
              .inbox(PostgresInboxStore.create(ctx.dataSource()))
              .metrics(metrics)
              .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d)));
      Message m = Effects.message(topic, "k", 1);
      fx.publish(m, 0);
      fx.publish(m, 0); // the same id again, as a relay would after a crash
      Tags p0 = Tags.of("group", "inventory", "topic", topic, "partition", "0");
      await()
          .atMost(WAIT)
          .until(() -> metrics.count(MetricName.CONSUMER_DUPLICATES_SUPPRESSED, p0) == 1);
      assertThat(metrics.count(MetricName.CONSUMER_PROCESSED, p0)).isEqualTo(1);
      assertThat(metrics.count(MetricName.CONSUMER_FAILED, p0)).isZero();
      assertThat(metrics.count(MetricName.CONSUMER_DEAD_LETTERED, p0)).isZero();
      Tags group = Tags.of("group", "inventory", "topic", topic);
      assertThat(metrics.recorded(MetricName.CONSUMER_HANDLER_TIME, group)).isEqualTo(2);
      assertThat(metrics.recorded(MetricName.CONSUMER_END_TO_END_TIME, group))
          .as("only the applied delivery has an effect to time")
          .isEqualTo(1);
      assertThat(fx.effects("inventory")).isEqualTo(1);
      await().atMost(WAIT).until(() -> metrics.gauge(MetricName.CONSUMER_OFFSET_LAG, p0) == 0);
    }
  }

  @Test
  void aStoppedConsumersOldestUnprocessedAgeGrowsWhileItsFailureCountStaysFlat(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 1);
    RecordingMetrics metrics = new RecordingMetrics();
    Tags p0 = Tags.of("group", "billing", "topic", topic, "partition", "0");
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers());
        ConsumerLagProbe probe =
            ConsumerLagProbe.builder(ctx.bootstrapServers())
                .groups("billing")
                .cacheFor(Duration.ZERO)
                .build()) {
      Subscription sub = Subscription.builder("billing").topics(topic).build();
      CountDownLatch release = new CountDownLatch(1);
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .metrics(metrics)
                  .handler(d -> {
                    if (d.message().header("seq").orElseThrow().equals("2")) {
                      Effects.awaitQuietly(release); // a hung dependency: no error, no progress
                    }
                    fx.applyAutoCommit(sub.name(), d);
                  }));
      fx.publish(Effects.message(topic, "k", 1), 0);
      await().atMost(WAIT).until(() -> fx.committedOffset("billing", topic, 0) == 1);
      probe.bindTo(metrics);
      assertThat(metrics.gauge(MetricName.GROUP_OLDEST_UNPROCESSED_AGE, p0)).isZero();

      // A hung handler: the in-process age grows, errors stay at zero.
      fx.publish(Effects.message(topic, "k", 2), 0);
      await()
          .atMost(WAIT)
          .until(() -> metrics.gauge(MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE, p0) > 0);
      double inProcess = metrics.gauge(MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE, p0);
      await()
          .atMost(WAIT)
          .until(() -> metrics.gauge(MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE, p0) > inProcess);
      assertThat(metrics.count(MetricName.CONSUMER_FAILED, p0)).isZero();
      release.countDown();
      await()
          .atMost(WAIT)
          .until(() -> metrics.gauge(MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE, p0) == 0);
      await().atMost(WAIT).until(() -> fx.committedOffset("billing", topic, 0) == 2);

      // The consumer stops: only the probe sees the age, and it keeps growing.
      s.close();
      fx.publish(Effects.message(topic, "k", 3), 0);
      await()
          .atMost(WAIT)
          .until(() -> metrics.gauge(MetricName.GROUP_OLDEST_UNPROCESSED_AGE, p0) > 0);
      double first = metrics.gauge(MetricName.GROUP_OLDEST_UNPROCESSED_AGE, p0);
      await()
          .atMost(WAIT)
          .until(() -> metrics.gauge(MetricName.GROUP_OLDEST_UNPROCESSED_AGE, p0) > first + 1);
      assertThat(metrics.gauge(MetricName.GROUP_OFFSET_LAG, p0)).isEqualTo(1);
      assertThat(metrics.count(MetricName.CONSUMER_FAILED, p0)).as("no error ever").isZero();

      // It comes back and catches up: age 0.
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
              .metrics(new RecordingMetrics())
              .handler(d -> fx.applyAutoCommit(sub.name(), d)));
      await()
          .atMost(WAIT)
          .until(() -> metrics.gauge(MetricName.GROUP_OLDEST_UNPROCESSED_AGE, p0) == 0);
      assertThat(metrics.gauge(MetricName.GROUP_OFFSET_LAG, p0)).isZero();
    }
  }

  @Test
  void relayLagAgeGrowsWhileRelaysAreStoppedAndReturnsToZeroAfter(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 3);
    Shop shop = new Shop(ctx.dataSource(), topic);
    RecordingMetrics metrics = new RecordingMetrics();
    OperationsProbe.builder(ctx.dataSource())
        .stuckThreshold(Duration.ofSeconds(1))
        .cacheFor(Duration.ZERO)
        .build()
        .bindTo(metrics);
    assertThat(metrics.gauge(MetricName.OUTBOX_OLDEST_PENDING_AGE, Tags.empty())).isZero();
    for (int i = 0; i < 50; i++) {
      shop.orderAndRecord("order-" + (i % 7));
    }
    assertThat(metrics.gauge(MetricName.OUTBOX_PENDING, Tags.empty())).isEqualTo(50);
    double first = metrics.gauge(MetricName.OUTBOX_OLDEST_PENDING_AGE, Tags.empty());
    await()
        .atMost(WAIT)
        .until(() -> metrics.gauge(MetricName.OUTBOX_OLDEST_PENDING_AGE, Tags.empty()) > first + 1);
    assertThat(metrics.gauge(MetricName.OUTBOX_STUCK, Tags.empty())).isEqualTo(1);

    Tags instance = Tags.of("instance", "r1");
    try (Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .instanceId("r1")
            .leaseTtl(Duration.ofSeconds(2))
            .pollInterval(Duration.ofMillis(200))
            .metrics(metrics)
            .build()) {
      relay.start();
      await().atMost(WAIT).until(() -> metrics.gauge(MetricName.OUTBOX_PENDING, Tags.empty()) == 0);
      assertThat(metrics.gauge(MetricName.OUTBOX_OLDEST_PENDING_AGE, Tags.empty())).isZero();
      assertThat(metrics.gauge(MetricName.OUTBOX_STUCK, Tags.empty())).isZero();
      await().atMost(WAIT).until(() -> metrics.count(MetricName.RELAY_PUBLISHED, instance) == 50);
      assertThat(metrics.count(MetricName.RELAY_PUBLISH_FAILURES, instance)).isZero();
      assertThat(metrics.gauge(MetricName.RELAY_LANES_OWNED, instance)).isEqualTo(64);
      await().atMost(WAIT).until(() -> metrics.gauge(MetricName.RELAY_LAG_AGE, instance) == 0);
      assertThat(metrics.gauge(MetricName.RELAY_PENDING, instance)).isZero();
    }

    // Every row records where it was published: exactly the record the topic holds.
    Map<String, String> where = new HashMap<>();
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT message_id, published_partition, published_offset FROM postbox_outbox")) {
      while (rs.next()) {
        where.put(rs.getString(1), rs.getInt(2) + "@" + rs.getLong(3));
      }
    }
    assertThat(where).hasSize(50);
    List<ConsumerRecord<byte[], byte[]>> records =
        shop.readUntil(ctx.bootstrapServers(), WAIT, got -> got.size() >= 50);
    for (ConsumerRecord<byte[], byte[]> r : records) {
      String id = new String(r.headers().lastHeader(KafkaRecords.CE_ID).value());
      assertThat(where.get(id)).as(id).isEqualTo(r.partition() + "@" + r.offset());
    }
  }
}
