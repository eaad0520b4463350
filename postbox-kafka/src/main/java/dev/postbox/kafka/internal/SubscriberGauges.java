package dev.postbox.kafka.internal;

import dev.postbox.core.engine.OffsetTracker;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import java.time.Clock;
import java.util.Collection;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicPartition;

/**
 * The gauges of one subscriber: per partition the age of the oldest unprocessed record and the
 * offset lag; per group whether the poll loop is alive and whether records wait on the membership
 * fence. Registered once; read by the metrics system from any thread.
 */
public final class SubscriberGauges {

  private final PostboxMetrics metrics;
  private final String group;
  private final Clock clock;
  private final Supplier<Set<TopicPartition>> assignment;
  private final Map<TopicPartition, OffsetTracker> trackers;
  private final Map<TopicPartition, Long> lags = new ConcurrentHashMap<>();
  private final Set<TopicPartition> gauged = ConcurrentHashMap.newKeySet();

  /** Gauges of subscription {@code group}, reading its live assignment and trackers. */
  public SubscriberGauges(
      PostboxMetrics metrics,
      String group,
      Clock clock,
      Supplier<Set<TopicPartition>> assignment,
      Map<TopicPartition, OffsetTracker> trackers) {
    this.metrics = metrics;
    this.group = group;
    this.clock = clock;
    this.assignment = assignment;
    this.trackers = trackers;
  }

  /** Whether any metric is reported (else the subscriber skips sampling). */
  public boolean enabled() {
    return metrics != PostboxMetrics.noop();
  }

  /** Registers the per-group health gauges. */
  public void health(BooleanSupplier alive, BooleanSupplier fenced) {
    if (!enabled()) {
      return;
    }
    Tags tags = Tags.of("group", group);
    metrics.gauge(MetricName.CONSUMER_POLL_LOOP_ALIVE, tags, () -> alive.getAsBoolean() ? 1 : 0);
    metrics.gauge(MetricName.CONSUMER_MEMBERSHIP_FENCED, tags, () -> fenced.getAsBoolean() ? 1 : 0);
  }

  /** Poll thread: samples the offset lag of each assigned partition ({@code currentLag}). */
  public void sampleLag(Function<TopicPartition, OptionalLong> currentLag) {
    if (!enabled()) {
      return;
    }
    for (TopicPartition tp : assignment.get()) {
      OptionalLong lag = currentLag.apply(tp);
      if (lag.isPresent()) {
        OffsetTracker t = trackers.get(tp);
        lags.put(tp, lag.getAsLong() + (t == null ? 0 : t.unfinished()));
      }
    }
  }

  /** Registers the per-partition gauges the first time this instance is assigned a partition. */
  public void assigned(Collection<TopicPartition> partitions) {
    if (!enabled()) {
      return;
    }
    for (TopicPartition tp : partitions) {
      if (!gauged.add(tp)) {
        continue;
      }
      Tags tags =
          Tags.of(
              "group", group, "topic", tp.topic(), "partition", Integer.toString(tp.partition()));
      metrics.gauge(MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE, tags, () -> oldestAge(tp));
      metrics.gauge(
          MetricName.CONSUMER_OFFSET_LAG,
          tags,
          () -> assignment.get().contains(tp) ? lags.getOrDefault(tp, 0L) : Double.NaN);
    }
  }

  /**
   * Seconds since the timestamp of the first unfinished record of {@code tp} (where the committed
   * offset points); 0 when all read records finished; NaN when the partition is not assigned here.
   */
  private double oldestAge(TopicPartition tp) {
    if (!assignment.get().contains(tp)) {
      return Double.NaN;
    }
    OffsetTracker t = trackers.get(tp);
    if (t == null) {
      return 0;
    }
    OptionalLong ts = t.oldestUnfinishedTimestamp();
    return ts.isEmpty() ? 0 : Math.max(0, clock.millis() - ts.getAsLong()) / 1000.0;
  }
}
