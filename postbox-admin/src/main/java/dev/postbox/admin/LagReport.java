package dev.postbox.admin;

import dev.postbox.core.consumer.QueueLag;
import java.time.Duration;
import java.util.List;

/**
 * How stale each consumer is: the transport's lag as age ({@link ConsumerLagSource}, empty without
 * one), the backlog of queue-based subscriptions ({@link QueueLagSource}, empty without one) and,
 * from the tables, what waits on an operator per consumer.
 *
 * @param partitions per partition of each group, from the lag source
 * @param consumers per consumer, from the tables
 * @param queues per queue of each subscription, from the queue lag source
 */
public record LagReport(
    List<ConsumerLagSource.PartitionLag> partitions,
    List<Backlog> consumers,
    List<QueueLag> queues) {

  public LagReport {
    partitions = List.copyOf(partitions);
    consumers = List.copyOf(consumers);
    queues = List.copyOf(queues);
  }

  /** A report without queues (no queue lag source). */
  public LagReport(List<ConsumerLagSource.PartitionLag> partitions, List<Backlog> consumers) {
    this(partitions, consumers, List.of());
  }

  /**
   * What waits for one consumer in the tables.
   *
   * @param deadLettersPending PENDING dead letters
   * @param oldestDeadLetterAge time since the oldest of them first failed (zero when none)
   * @param parkedKeys parked keys
   * @param parkedMessages parked messages
   * @param oldestParkedAge time since the oldest parked message was parked (zero when none)
   */
  public record Backlog(
      String consumer,
      long deadLettersPending,
      Duration oldestDeadLetterAge,
      long parkedKeys,
      long parkedMessages,
      Duration oldestParkedAge) {}
}
