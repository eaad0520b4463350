package dev.postbox.kafka.internal;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.engine.OffsetTracker;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands partitions over in a rebalance: on revocation stops their records from starting, waits for
 * the running ones (one deadline, the shutdown timeout) and commits their finished prefix; on loss
 * drops them without a commit; on assignment pauses them if reading is paused and registers their
 * gauges.
 *
 * <p>Kafka runs these callbacks on the poll thread, inside {@code poll}.
 */
public final class RebalanceHandler implements ConsumerRebalanceListener {

  private static final Logger log = LoggerFactory.getLogger(RebalanceHandler.class);

  private final String name;
  private final Duration shutdownTimeout;
  private final Ticker ticker;
  private final Consumer<byte[], byte[]> consumer;
  private final SubscriberPartitions partitions;
  private final OffsetCommitter committer;
  private final BooleanSupplier allPaused;
  private final SubscriberGauges gauges;
  private final AssignmentListener onAssigned;

  /** As below, with nothing to do on assignment. */
  public RebalanceHandler(
      String name,
      Duration shutdownTimeout,
      Ticker ticker,
      Consumer<byte[], byte[]> consumer,
      SubscriberPartitions partitions,
      OffsetCommitter committer,
      BooleanSupplier allPaused,
      SubscriberGauges gauges) {
    this(
        name,
        shutdownTimeout,
        ticker,
        consumer,
        partitions,
        committer,
        allPaused,
        gauges,
        AssignmentListener.NONE);
  }

  /**
   * A handler for subscription {@code name}: revocations wait at most {@code shutdownTimeout} on
   * {@code ticker}; new partitions are paused while {@code allPaused}, then handed to {@code
   * onAssigned} (which may seek them).
   */
  public RebalanceHandler(
      String name,
      Duration shutdownTimeout,
      Ticker ticker,
      Consumer<byte[], byte[]> consumer,
      SubscriberPartitions partitions,
      OffsetCommitter committer,
      BooleanSupplier allPaused,
      SubscriberGauges gauges,
      AssignmentListener onAssigned) {
    this.name = name;
    this.shutdownTimeout = shutdownTimeout;
    this.ticker = ticker;
    this.consumer = consumer;
    this.partitions = partitions;
    this.committer = committer;
    this.allPaused = allPaused;
    this.gauges = gauges;
    this.onAssigned = onAssigned;
  }

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> revokedPartitions) {
    Map<TopicPartition, OffsetTracker> revoked = new HashMap<>();
    for (TopicPartition tp : revokedPartitions) {
      partitions.tracker(tp).ifPresent(t -> revoked.put(tp, t));
    }
    log.info("{}: revoked {}", name, revokedPartitions);
    try {
      // every revoked partition is marked before any wait: none starts a record from here on
      Map<TopicPartition, Integer> left =
          new PartitionRevocation(shutdownTimeout, ticker::nanos).revoke(revoked);
      if (!left.isEmpty()) {
        log.warn("{}: records still running at revocation: {}", name, left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = committer.advanced(revoked);
    if (!revokedPartitions.isEmpty()) {
      // in-flight work of the revoked partitions is finished, its offsets not committed yet
      CrashPoints.hit(CrashPoints.CONSUMER_DURING_REBALANCE);
    }
    committer.commit(offsets, true); // nothing with AT_MOST_ONCE
    forget(revokedPartitions);
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> lost) {
    log.info("{}: lost {} (another member may own them already)", name, lost);
    for (TopicPartition tp : lost) {
      partitions
          .tracker(tp)
          .ifPresent(tracker -> {
            try {
              tracker.revokeAndAwait(Duration.ZERO);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          });
    }
    forget(lost); // no commit: another member may already own them
  }

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
    if (allPaused.getAsBoolean()) {
      consumer.pause(assigned);
    }
    onAssigned.assigned(consumer, assigned);
    partitions.assigned(consumer.assignment());
    gauges.assigned(assigned);
    log.info("{}: assigned {} (now owns {})", name, assigned, partitions.assignment().size());
  }

  private void forget(Collection<TopicPartition> gone) {
    partitions.forget(gone);
    committer.forget(gone);
    partitions.assigned(consumer.assignment());
  }
}
