package dev.postbox.kafka.internal;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Which assigned partitions the poll thread keeps paused.
 *
 * <ul>
 *   <li><b>All of them</b> from the moment the subscriber's in-flight limit is {@linkplain
 *       InFlightLimit#full() full} until it is {@linkplain InFlightLimit#resumable() resumable}
 *       again (the subscriber-wide back-pressure).
 *   <li><b>One partition</b> whose records run one after another (partition order, or batches: in
 *       key order a partition's batches share most keys from one poll to the next) once it holds
 *       its share of the in-flight limit, until it is down to half of that share. Kafka's consumer
 *       returns the records of one partition's fetch poll after poll; without this, a serial
 *       partition filled the whole in-flight window while the other partitions' workers sat idle
 *       (measured: one of six batch lanes busy on average). A paused partition's fetched records
 *       stay buffered in the consumer, so the next poll moves on to the next partition.
 * </ul>
 *
 * <p>The share of a partition is the in-flight limit divided by the number of assigned partitions,
 * and at least {@code partitionFloor} (two batches: one running, one ready). Defaults: none; the
 * subscriber passes {@code 0} (no per-partition pauses) for key-ordered and unordered records,
 * which run concurrently within a partition.
 *
 * <p>Not thread-safe: the poll thread owns it.
 */
public final class PausePolicy {

  private final int maxInFlight;
  private final int partitionFloor;
  private boolean allPaused;

  /**
   * A policy for an in-flight limit of {@code maxInFlight}; {@code partitionFloor} is the smallest
   * per-partition share, {@code 0} for no per-partition pauses.
   */
  public PausePolicy(int maxInFlight, int partitionFloor) {
    if (maxInFlight < 1 || partitionFloor < 0) {
      throw new IllegalArgumentException(
          "maxInFlight must be positive and partitionFloor not negative, were "
              + maxInFlight
              + " and "
              + partitionFloor);
    }
    this.maxInFlight = maxInFlight;
    this.partitionFloor = partitionFloor;
  }

  /** Whether every partition is paused by the subscriber-wide limit. */
  public boolean allPaused() {
    return allPaused;
  }

  /**
   * The partitions to keep paused now.
   *
   * @param limit the subscriber's in-flight records
   * @param unfinished every assigned partition and its records read and not finished
   * @param pausedNow the partitions paused now
   */
  public <P> Set<P> decide(InFlightLimit limit, Map<P, Integer> unfinished, Set<P> pausedNow) {
    if (!allPaused && limit.full()) {
      allPaused = true;
    } else if (allPaused && limit.resumable()) {
      allPaused = false;
    }
    if (allPaused) {
      return Set.copyOf(unfinished.keySet());
    }
    Set<P> paused = new HashSet<>();
    if (partitionFloor == 0 || unfinished.isEmpty()) {
      return paused;
    }
    int share = Math.max(partitionFloor, maxInFlight / unfinished.size());
    unfinished.forEach((p, n) -> {
      boolean stay = pausedNow.contains(p) ? n > share / 2 : n >= share;
      if (stay) {
        paused.add(p);
      }
    });
    return paused;
  }
}
