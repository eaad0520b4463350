package dev.postbox.core.engine;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.PostboxMetrics.Counter;
import dev.postbox.core.metrics.PostboxMetrics.Timer;
import dev.postbox.core.metrics.Tags;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The instruments of one consumer group, created once per partition (counters) or topic (timers)
 * and cached, so the hot path does one map lookup per event. Thread-safe.
 */
final class ConsumerMeters {

  private record TopicPartition(String topic, int partition) {}

  /** The counters of one partition. */
  static final class Partition {
    final Counter processed;
    final Counter failed;
    final Counter retried;
    final Counter deadLettered;
    final Counter storeRefused;
    final Counter duplicates;
    final Counter stale;
    final Counter unknownTypes;
    final Counter replaysSkipped;
    final Counter parked;
    final Counter leaseExpired;
    final Counter leaseLost;

    private Partition(PostboxMetrics m, Tags t) {
      processed = m.counter(MetricName.CONSUMER_PROCESSED, t);
      failed = m.counter(MetricName.CONSUMER_FAILED, t);
      retried = m.counter(MetricName.CONSUMER_RETRIED, t);
      deadLettered = m.counter(MetricName.CONSUMER_DEAD_LETTERED, t);
      storeRefused = m.counter(MetricName.CONSUMER_STORE_REFUSED, t);
      duplicates = m.counter(MetricName.CONSUMER_DUPLICATES_SUPPRESSED, t);
      stale = m.counter(MetricName.CONSUMER_STALE_SKIPPED, t);
      unknownTypes = m.counter(MetricName.CONSUMER_UNKNOWN_TYPES, t);
      replaysSkipped = m.counter(MetricName.CONSUMER_REPLAYS_SKIPPED, t);
      parked = m.counter(MetricName.CONSUMER_PARKED, t);
      leaseExpired = m.counter(MetricName.CONSUMER_IDEMPOTENCY_LEASE_EXPIRED, t);
      leaseLost = m.counter(MetricName.CONSUMER_IDEMPOTENCY_LEASE_LOST, t);
    }
  }

  /** The timers of one topic. */
  record Timers(Timer handler, Timer endToEnd) {}

  private final PostboxMetrics metrics;
  private final String group;
  private final Map<TopicPartition, Partition> partitions = new ConcurrentHashMap<>();
  private final Map<String, Timers> timers = new ConcurrentHashMap<>();

  ConsumerMeters(PostboxMetrics metrics, String group) {
    this.metrics = metrics;
    this.group = group;
  }

  Partition of(String topic, int partition) {
    return partitions.computeIfAbsent(
        new TopicPartition(topic, partition),
        tp ->
            new Partition(
                metrics,
                Tags.of("group", group, "topic", topic, "partition", Integer.toString(partition))));
  }

  Timers timers(String topic) {
    return timers.computeIfAbsent(
        topic,
        t -> {
          Tags tags = Tags.of("group", group, "topic", t);
          return new Timers(
              metrics.timer(MetricName.CONSUMER_HANDLER_TIME, tags),
              metrics.timer(MetricName.CONSUMER_END_TO_END_TIME, tags));
        });
  }
}
