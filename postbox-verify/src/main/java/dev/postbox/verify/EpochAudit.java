package dev.postbox.verify;

import dev.postbox.verify.TopicReader.Published;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Counts stale publishes exactly, from the relay's epoch header: in each partition, a record whose
 * lane's epoch ({@code pb_relay_epoch}) is lower than an epoch of the same lane on an earlier
 * record of that partition was published by a relay that had already lost the lane to the owner of
 * that higher epoch. The idempotent relay can produce them (a paused owner's in-flight batch lands
 * after its successor's); the transactional relay must not (the successor's {@code
 * initTransactions} fences it), as {@code read_committed} readers see the topic.
 */
final class EpochAudit {

  private EpochAudit() {}

  /**
   * The stale publishes among {@code byPartition} (records in offset order) that {@code counted}
   * accepts; every record with the headers takes part in the epoch history.
   */
  static long stalePublishes(
      Map<Integer, List<Published>> byPartition, Predicate<Published> counted) {
    return audit(byPartition, counted).stale();
  }

  /**
   * The audit of the records {@code counted} accepts: the stale publishes, and the records the
   * audit could not judge because they carry no lane or epoch header (a record from before the
   * headers existed, or from a relay that does not stamp them): counted, never skipped silently.
   */
  static Result audit(Map<Integer, List<Published>> byPartition, Predicate<Published> counted) {
    long stale = 0;
    long unstamped = 0;
    for (List<Published> records : byPartition.values()) {
      Map<Integer, Long> maxEpoch = new HashMap<>();
      for (Published r : records) {
        if (r.lane() < 0 || r.epoch() < 0) {
          if (counted.test(r)) {
            unstamped++;
          }
          continue;
        }
        long max = maxEpoch.getOrDefault(r.lane(), -1L);
        if (r.epoch() < max && counted.test(r)) {
          stale++;
        }
        maxEpoch.put(r.lane(), Math.max(max, r.epoch()));
      }
    }
    return new Result(stale, unstamped);
  }

  /** Stale publishes, and records without the relay's lane or epoch header. */
  record Result(long stale, long unstamped) {}
}
