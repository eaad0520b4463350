package dev.postbox.kafka.internal;

import dev.postbox.core.engine.OffsetTracker;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import org.apache.kafka.common.TopicPartition;

/**
 * Ends this member's work on partitions the group takes away: marks every revoked partition first
 * (so that none of their records starts from then on), then waits once, against one deadline, for
 * the records already running on any of them.
 *
 * <p>Waiting partition by partition, each with the full timeout, would both multiply the wait by
 * the number of partitions (while the group waits for this member) and let the partitions not yet
 * marked start more records meanwhile.
 */
public final class PartitionRevocation {

  private final Duration timeout;
  private final LongSupplier nanoTime;

  /**
   * Revocations that wait at most {@code timeout} in all; {@code nanoTime} is the monotonic clock
   * ({@code System::nanoTime} outside tests).
   */
  public PartitionRevocation(Duration timeout, LongSupplier nanoTime) {
    this.timeout = timeout;
    this.nanoTime = nanoTime;
  }

  /**
   * Marks every tracker revoked, then waits until none of them runs a record or the one deadline
   * passed. Returns, per partition, how many records were still running (partitions with none are
   * left out).
   *
   * @throws InterruptedException if interrupted while waiting (every partition is marked already)
   */
  public Map<TopicPartition, Integer> revoke(Map<TopicPartition, OffsetTracker> trackers)
      throws InterruptedException {
    for (OffsetTracker t : trackers.values()) {
      t.markRevoked();
    }
    long deadline = nanoTime.getAsLong() + timeout.toNanos();
    Map<TopicPartition, Integer> left = new TreeMap<>(PartitionRevocation::compare);
    for (Map.Entry<TopicPartition, OffsetTracker> e : trackers.entrySet()) {
      int running = e.getValue().awaitIdle(deadline, nanoTime);
      if (running > 0) {
        left.put(e.getKey(), running);
      }
    }
    return left;
  }

  private static int compare(TopicPartition a, TopicPartition b) {
    int c = a.topic().compareTo(b.topic());
    return c != 0 ? c : Integer.compare(a.partition(), b.partition());
  }
}
