package dev.postbox.admin;

import java.time.Duration;
import java.util.List;

/**
 * How stale each consumer is: the transport's lag as age ({@link ConsumerLagSource}, empty without
 * one) and, from the tables, what waits on an operator per consumer.
 *
 * @param partitions per partition of each group, from the lag source
 * @param consumers per consumer, from the tables
 */
public record LagReport(List<ConsumerLagSource.PartitionLag> partitions, List<Backlog> consumers) {

  public LagReport {
    partitions = List.copyOf(partitions);
    consumers = List.copyOf(consumers);
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
