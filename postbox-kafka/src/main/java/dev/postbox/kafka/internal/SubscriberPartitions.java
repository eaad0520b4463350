package dev.postbox.kafka.internal;

import dev.postbox.core.engine.OffsetTracker;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicPartition;

/**
 * The per-partition bookkeeping of one subscriber: each partition's offset tracker, its count of
 * records read and not finished (for the per-partition pauses), and the current assignment.
 *
 * <p>Thread-safe: the poll thread adds and forgets partitions, workers count down, the gauges and
 * {@code state()} read.
 */
public final class SubscriberPartitions {

  private final Map<TopicPartition, OffsetTracker> trackers = new ConcurrentHashMap<>();
  private final Map<TopicPartition, AtomicInteger> unfinished = new ConcurrentHashMap<>();
  private volatile Set<TopicPartition> assignment = Set.of();

  /** The live map of trackers (read by the gauges and the committer; not to be modified). */
  public Map<TopicPartition, OffsetTracker> trackers() {
    return trackers;
  }

  /** The tracker of {@code tp}, if records of it were dispatched since it was assigned. */
  public Optional<OffsetTracker> tracker(TopicPartition tp) {
    return Optional.ofNullable(trackers.get(tp));
  }

  /** Poll thread: the tracker of {@code tp}, made at its first dispatch. */
  public OffsetTracker trackerFor(TopicPartition tp) {
    return trackers.computeIfAbsent(tp, k -> new OffsetTracker());
  }

  /** Poll thread: the count of unfinished records of {@code tp}, made at its first dispatch. */
  public AtomicInteger unfinishedFor(TopicPartition tp) {
    return unfinished.computeIfAbsent(tp, k -> new AtomicInteger());
  }

  /** Records read and not finished for each of {@code partitions} (0 where none was read). */
  public Map<TopicPartition, Integer> unfinished(Collection<TopicPartition> partitions) {
    Map<TopicPartition, Integer> out = new HashMap<>();
    for (TopicPartition tp : partitions) {
      AtomicInteger n = unfinished.get(tp);
      out.put(tp, n == null ? 0 : n.get());
    }
    return out;
  }

  /** Partitions currently assigned to this instance. */
  public Set<TopicPartition> assignment() {
    return assignment;
  }

  /** Poll thread: the consumer's assignment is now {@code assigned}. */
  public void assigned(Set<TopicPartition> assigned) {
    assignment = Set.copyOf(assigned);
  }

  /** Poll thread: drops the bookkeeping of {@code partitions}, which left this instance. */
  public void forget(Collection<TopicPartition> partitions) {
    for (TopicPartition tp : partitions) {
      trackers.remove(tp);
      unfinished.remove(tp);
    }
  }
}
