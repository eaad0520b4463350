package dev.postbox.kafka.internal;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.time.Ticker;
import java.time.Clock;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.Consumer;

/**
 * The moving parts of one subscriber, made once from its settings: the partitions' bookkeeping, the
 * in-flight limit and pauses, the membership fence, the poll loop's health, the gauges and the
 * workers; and the wiring of a {@link PollLoop} around a consumer from them. Thread-safe.
 */
public final class SubscriberRuntime {

  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final Ticker ticker;
  private final SubscriberPartitions partitions = new SubscriberPartitions();
  private final InFlightLimit inFlight;
  private final PausePolicy pauses;
  private final MembershipFence fence;
  private final PollLoopHealth health;
  private final SubscriberGauges gauges;
  private final KeyedExecutor executor;

  /** The parts of a subscriber of {@code subscription} whose consumer has {@code config}. */
  public SubscriberRuntime(
      Subscription subscription,
      DeliveryProcessor processor,
      Map<String, Object> config,
      PostboxMetrics metrics,
      Clock clock,
      Ticker ticker) {
    this.subscription = subscription;
    this.processor = processor;
    this.ticker = ticker;
    this.fence =
        new MembershipFence(
            subscription.name(), MembershipFence.thresholdFor(config), ticker::nanos);
    this.health = new PollLoopHealth(clock);
    this.gauges =
        new SubscriberGauges(
            metrics, subscription.name(), clock, partitions::assignment, partitions.trackers());
    this.inFlight = new InFlightLimit(subscription.maxInFlight());
    boolean serial = subscription.batchSize() > 1 || subscription.ordering() == Ordering.PARTITION;
    this.pauses =
        new PausePolicy(subscription.maxInFlight(), serial ? 2 * subscription.batchSize() : 0);
    this.executor = new KeyedExecutor("postbox-" + subscription.name(), subscription.concurrency());
  }

  /**
   * Wires the poll loop's parts around {@code consumer}; {@code onAssigned} runs on the poll thread
   * for each newly assigned set of partitions (before any of their records is fetched).
   */
  public PollLoop pollLoop(
      Consumer<byte[], byte[]> consumer, AssignmentListener onAssigned, BooleanSupplier running) {
    boolean atMostOnce = subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE;
    OffsetCommitter committer =
        new OffsetCommitter(
            consumer, subscription.name(), atMostOnce, partitions.trackers(), fence);
    RebalanceHandler rebalance =
        new RebalanceHandler(
            subscription.name(),
            subscription.shutdownTimeout(),
            ticker,
            consumer,
            partitions,
            committer,
            pauses::allPaused,
            gauges,
            onAssigned);
    RecordDispatcher dispatcher =
        new RecordDispatcher(subscription, processor, executor, partitions, inFlight, fence);
    return new PollLoop(
        new PollLoop.Parts(
            subscription,
            consumer,
            processor,
            dispatcher,
            committer,
            rebalance,
            partitions,
            inFlight,
            pauses,
            fence,
            health,
            gauges,
            ticker),
        running);
  }

  /** The partitions' bookkeeping. */
  public SubscriberPartitions partitions() {
    return partitions;
  }

  /** Records read and not yet finished. */
  public int inFlight() {
    return inFlight.get();
  }

  /** The poll loop's health. */
  public PollLoopHealth health() {
    return health;
  }

  /** The gauges. */
  public SubscriberGauges gauges() {
    return gauges;
  }

  /** The workers. */
  public KeyedExecutor executor() {
    return executor;
  }

  /** Whether records wait on the membership fence of a live poll loop. */
  public boolean fenced() {
    return health.alive()
        && subscription.guarantee() != DeliveryGuarantee.AT_MOST_ONCE
        && fence.fenced();
  }
}
