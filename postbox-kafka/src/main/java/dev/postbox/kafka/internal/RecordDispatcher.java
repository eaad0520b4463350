package dev.postbox.kafka.internal;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.engine.OffsetTracker;
import dev.postbox.core.engine.Ownership;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands polled records to the workers, one lane per key (or partition, or none), or as batches that
 * hold their keys' lanes ({@link BatchPlan}), and runs each through the delivery processor while
 * its partition is still this member's.
 *
 * <p>A record starts only if the subscriber is not closing, its partition is not revoked and (but
 * for {@code AT_MOST_ONCE}) the {@link MembershipFence} is open; it ends in its partition's {@link
 * OffsetTracker} as finished or not, and in the in-flight counts either way. The poll thread
 * dispatches; workers run. Thread-safe.
 */
public final class RecordDispatcher {

  private static final Logger log = LoggerFactory.getLogger(RecordDispatcher.class);

  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final KeyedExecutor executor;
  private final SubscriberPartitions partitions;
  private final InFlightLimit inFlight;
  private final MembershipFence fence;
  private volatile boolean closing;

  /**
   * Dispatches {@code subscription}'s records to {@code executor}, processed by {@code processor}.
   */
  public RecordDispatcher(
      Subscription subscription,
      DeliveryProcessor processor,
      KeyedExecutor executor,
      SubscriberPartitions partitions,
      InFlightLimit inFlight,
      MembershipFence fence) {
    this.subscription = subscription;
    this.processor = processor;
    this.executor = executor;
    this.partitions = partitions;
    this.inFlight = inFlight;
    this.fence = fence;
  }

  /** From now on no record starts (unstarted ones are abandoned) and retries stop. */
  public void stopStarting() {
    closing = true;
  }

  /** Poll thread: hands {@code records} to the workers. */
  public void dispatch(ConsumerRecords<byte[], byte[]> records) {
    for (TopicPartition tp : records.partitions()) {
      OffsetTracker tracker = partitions.trackerFor(tp);
      AtomicInteger partitionCount = partitions.unfinishedFor(tp);
      List<ConsumerRecord<byte[], byte[]>> rs = records.records(tp);
      if (subscription.batchSize() > 1) {
        for (BatchPlan.Batch b :
            BatchPlan.of(tp, rs, subscription.batchSize(), subscription.ordering())) {
          List<ConsumerRecord<byte[], byte[]>> batch = b.records();
          batch.forEach(r -> tracker.dispatched(r.offset(), r.timestamp()));
          inFlight.dispatched(batch.size());
          partitionCount.addAndGet(batch.size());
          executor.submitAcross(b.lanes(), () -> runBatch(tracker, partitionCount, batch));
        }
      } else {
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          tracker.dispatched(r.offset(), r.timestamp());
          inFlight.dispatched(1);
          partitionCount.incrementAndGet();
          executor.submit(lane(tp, r), () -> runOne(tracker, partitionCount, r));
        }
      }
    }
  }

  private Object lane(TopicPartition tp, ConsumerRecord<byte[], byte[]> r) {
    return switch (subscription.ordering()) {
      case UNORDERED -> null;
      case PARTITION -> tp;
      case KEY -> BatchPlan.lane(tp, r);
    };
  }

  /** Whether a worker may (still) work on a record of {@code tracker}'s partition. */
  private BooleanSupplier owned(OffsetTracker tracker) {
    return ownership(subscription.guarantee(), fence, () -> closing, tracker::revoked);
  }

  /**
   * A worker's hold on a record of a partition that {@code revoked} says this member lost, for a
   * subscription with {@code guarantee}, fenced by {@code fence}.
   *
   * <p>May start: not closing, the membership fresh (waits while it is unverified), not revoked.
   * May commit (asked inside the transaction, after the handler): the membership fresh, or waiting
   * until it is verified; a record that passed the first check just before a pause longer than the
   * session timeout must not commit after a successor took its partition. Not the start's
   * conditions: a record in flight while its partition is revoked in a rebalance, or while the
   * subscriber closes, still commits as before while the membership is fresh (the member still
   * holds it then). At most once has no transaction to guard: only the start is checked.
   */
  static BooleanSupplier ownership(
      DeliveryGuarantee guarantee,
      MembershipFence fence,
      BooleanSupplier closing,
      BooleanSupplier revoked) {
    if (guarantee == DeliveryGuarantee.AT_MOST_ONCE) {
      return () -> !closing.getAsBoolean() && !revoked.getAsBoolean();
    }
    BooleanSupplier membershipFresh =
        () -> fence.awaitFresh(() -> closing.getAsBoolean() || revoked.getAsBoolean());
    return Ownership.of(
        () -> !closing.getAsBoolean() && membershipFresh.getAsBoolean() && !revoked.getAsBoolean(),
        membershipFresh);
  }

  private void runOne(
      OffsetTracker tracker, AtomicInteger partitionCount, ConsumerRecord<byte[], byte[]> r) {
    try {
      if (closing || !tracker.tryStart()) {
        processor.abandoned(1);
        return;
      }
      boolean finished = false;
      try {
        finished = processor.process(IncomingRecords.of(r), owned(tracker));
      } catch (RuntimeException e) {
        log.error(
            "{}: unexpected failure at {}", subscription.name(), IncomingRecords.position(r), e);
      } finally {
        tracker.ended(r.offset(), finished);
      }
    } finally {
      partitionCount.decrementAndGet();
      inFlight.finished(1);
    }
  }

  private void runBatch(
      OffsetTracker tracker,
      AtomicInteger partitionCount,
      List<ConsumerRecord<byte[], byte[]>> rs) {
    try {
      if (closing || !tracker.tryStart()) {
        processor.abandoned(rs.size());
        return;
      }
      boolean finished = false;
      try {
        List<Incoming> batch = new ArrayList<>(rs.size());
        rs.forEach(r -> batch.add(IncomingRecords.of(r)));
        finished = processor.processBatch(batch, owned(tracker));
      } catch (RuntimeException e) {
        log.error(
            "{}: unexpected batch failure at {}",
            subscription.name(),
            IncomingRecords.position(rs.get(0)),
            e);
      } finally {
        // A batch is one unit: started once, ended once; its offsets finish together.
        tracker.ended(rs.stream().map(ConsumerRecord::offset).toList(), finished);
      }
    } finally {
      partitionCount.addAndGet(-rs.size());
      inFlight.finished(rs.size());
    }
  }
}
