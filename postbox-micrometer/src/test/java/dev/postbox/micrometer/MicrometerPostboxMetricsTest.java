package dev.postbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MicrometerPostboxMetricsTest {

  private static final Tags PARTITION_0 = Tags.of("group", "g", "topic", "t", "partition", "0");

  @Test
  void countersCountPerTagSet() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    PostboxMetrics m = MicrometerPostboxMetrics.of(registry);
    m.counter(MetricName.CONSUMER_DUPLICATES_SUPPRESSED, PARTITION_0).increment();
    m.counter(MetricName.CONSUMER_DUPLICATES_SUPPRESSED, PARTITION_0).increment(2);
    m.counter(MetricName.CONSUMER_DUPLICATES_SUPPRESSED, PARTITION_0.and("partition", "1"))
        .increment();

    assertThat(
            registry
                .get("postbox.consumer.duplicates.suppressed")
                .tag("partition", "0")
                .counter()
                .count())
        .isEqualTo(3);
    assertThat(
            registry
                .get("postbox.consumer.duplicates.suppressed")
                .tag("partition", "1")
                .counter()
                .count())
        .isEqualTo(1);
  }

  @Test
  void gaugesReadTheirSupplierWhenRead() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AtomicLong age = new AtomicLong(5);
    MicrometerPostboxMetrics.of(registry)
        .gauge(MetricName.GROUP_OLDEST_UNPROCESSED_AGE, PARTITION_0, age::get);
    assertThat(registry.get("postbox.group.oldest.unprocessed.age").gauge().value()).isEqualTo(5);
    age.set(42);
    assertThat(registry.get("postbox.group.oldest.unprocessed.age").gauge().value()).isEqualTo(42);
  }

  @Test
  void timersRecordDurationsAndClampNegativeOnes() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    PostboxMetrics.Timer t =
        MicrometerPostboxMetrics.of(registry)
            .timer(MetricName.CONSUMER_END_TO_END_TIME, Tags.of("group", "g", "topic", "t"));
    t.record(Duration.ofMillis(250));
    t.record(Duration.ofMillis(-5)); // clock skew between producer and consumer
    var timer = registry.get("postbox.consumer.end.to.end.time").timer();
    assertThat(timer.count()).isEqualTo(2);
    assertThat(timer.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS)).isEqualTo(250);
  }

  @Test
  void aMetricIsOnlyUsedAsItsKind() {
    PostboxMetrics m = MicrometerPostboxMetrics.of(new SimpleMeterRegistry());
    assertThatThrownBy(() -> m.counter(MetricName.RELAY_LAG_AGE, Tags.of("instance", "a")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("GAUGE");
  }

  @Test
  void prometheusScrapeNamesFollowTheConventions() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    PostboxMetrics m = MicrometerPostboxMetrics.of(registry);
    m.counter(MetricName.CONSUMER_DUPLICATES_SUPPRESSED, PARTITION_0).increment();
    m.gauge(MetricName.OUTBOX_OLDEST_PENDING_AGE, Tags.empty(), () -> 12.5);
    m.timer(MetricName.CONSUMER_HANDLER_TIME, Tags.of("group", "g", "topic", "t"))
        .record(Duration.ofMillis(3));
    String scrape = registry.scrape();
    assertThat(scrape)
        .contains(
            "postbox_consumer_duplicates_suppressed_total{group=\"g\",partition=\"0\",topic=\"t\"} 1.0")
        .contains("postbox_outbox_oldest_pending_age_seconds 12.5")
        .contains("postbox_consumer_handler_time_seconds_bucket{");
  }

  @Test
  void theNoopMetricsAcceptEverythingAndKeepNothing() {
    PostboxMetrics m = PostboxMetrics.noop();
    m.counter(MetricName.CONSUMER_PROCESSED, PARTITION_0).increment(5);
    m.timer(MetricName.CONSUMER_HANDLER_TIME, Tags.empty()).record(Duration.ofSeconds(1));
    AtomicLong reads = new AtomicLong();
    m.gauge(MetricName.OUTBOX_PENDING, Tags.empty(), () -> reads.incrementAndGet());
    assertThat(reads).hasValue(0); // never read: nothing is kept
    assertThat(m.counter(MetricName.CONSUMER_FAILED, PARTITION_0))
        .isSameAs(m.counter(MetricName.CONSUMER_PROCESSED, Tags.empty()));
  }
}
