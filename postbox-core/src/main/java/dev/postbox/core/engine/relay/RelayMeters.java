package dev.postbox.core.engine.relay;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.RelayStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one relay counts and reports: the {@link Relay.Stats} counters, the {@code postbox.relay.*}
 * metrics (counters, and gauges of lanes owned and of the backlog the heartbeat samples) and the
 * per-batch timing line at DEBUG. Thread-safe.
 */
final class RelayMeters {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

  private final String instanceId;
  private final PostboxMetrics metrics;
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong publishFailures = new AtomicLong();
  private final AtomicLong permanentFailures = new AtomicLong();
  private final AtomicLong fenced = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final PostboxMetrics.Counter publishedCounter;
  private final PostboxMetrics.Counter failuresCounter;
  private final PostboxMetrics.Counter unpublishableCounter;
  // The backlog as last sampled by the heartbeat (null until the first sample, or when the store
  // cannot tell).
  private volatile RelayStore.Backlog backlog;

  RelayMeters(
      String instanceId, PostboxMetrics metrics, Duration stuckThreshold, IntSupplier lanesOwned) {
    this.instanceId = instanceId;
    this.metrics = metrics;
    Tags tags = Tags.of("instance", instanceId);
    this.publishedCounter = metrics.counter(MetricName.RELAY_PUBLISHED, tags);
    this.failuresCounter = metrics.counter(MetricName.RELAY_PUBLISH_FAILURES, tags);
    this.unpublishableCounter = metrics.counter(MetricName.RELAY_UNPUBLISHABLE, tags);
    metrics.gauge(MetricName.RELAY_LANES_OWNED, tags, lanesOwned::getAsInt);
    metrics.gauge(
        MetricName.RELAY_PENDING, tags, () -> backlog == null ? Double.NaN : backlog.pending());
    metrics.gauge(MetricName.RELAY_LAG_AGE, tags, this::backlogAgeSeconds);
    metrics.gauge(
        MetricName.RELAY_STUCK,
        tags,
        () ->
            backlog == null
                ? Double.NaN
                : backlog.oldestAge().compareTo(stuckThreshold) > 0 ? 1 : 0);
  }

  private double backlogAgeSeconds() {
    RelayStore.Backlog b = backlog;
    return b == null ? Double.NaN : b.oldestAge().toNanos() / 1e9;
  }

  /** The counter of rows marked unpublishable ({@link UnpublishableRowMarker} counts them). */
  PostboxMetrics.Counter unpublishableCounter() {
    return unpublishableCounter;
  }

  /** Samples the pending rows for the gauges: once per heartbeat, never per batch. */
  void sampleBacklog(RelayStore store) {
    if (metrics == PostboxMetrics.noop()) {
      return;
    }
    try {
      backlog = store.backlog().orElse(null);
    } catch (RuntimeException e) {
      log.debug("relay {}: sampling the backlog failed: {}", instanceId, e.toString());
    }
  }

  /** One row failed to publish (one attempt). */
  void publishFailed() {
    publishFailures.incrementAndGet();
    failuresCounter.increment();
  }

  /** One row was marked unpublishable. */
  void permanentFailure() {
    permanentFailures.incrementAndGet();
  }

  /**
   * A batch was marked: {@code marked} of its {@code acknowledged} rows (the rest were fenced off
   * by a lost lease).
   */
  void batchMarked(int acknowledged, int marked) {
    published.addAndGet(marked);
    publishedCounter.increment(marked);
    batches.incrementAndGet();
    if (marked < acknowledged) {
      fenced.addAndGet(acknowledged - marked);
    }
  }

  /** Logs one batch's timings at DEBUG; the publish overlaps the next batch's claim. */
  void batchTimed(int size, Duration claim, Duration publish, Duration mark) {
    if (log.isDebugEnabled()) {
      log.debug(
          "batch of {}: claim {} ms, publish {} ms (overlapping the next claim), mark {} ms",
          size,
          claim.toMillis(),
          publish.toMillis(),
          mark.toMillis());
    }
  }

  Relay.Stats stats() {
    return new Relay.Stats(
        published.get(),
        publishFailures.get(),
        permanentFailures.get(),
        fenced.get(),
        batches.get());
  }
}
