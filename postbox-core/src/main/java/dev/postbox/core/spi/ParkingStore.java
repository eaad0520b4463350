package dev.postbox.core.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * Ordered parking: when a message of a key keeps failing, it <em>and every later message of that
 * key</em> are parked here, in order, and retried as a sequence later (delayed retries off the hot
 * path) while other keys flow on. {@code postbox-jdbc} implements it for PostgreSQL.
 *
 * <p>Implementations must be thread-safe.
 */
public interface ParkingStore {

  /**
   * Appends {@code record} to the parked sequence of {@code key}, atomically, only if the key has
   * one. Returns whether it was appended (then the caller must not apply it: it waits its turn
   * behind the parked head).
   */
  boolean appendIfParked(String consumer, String key, ParkedRecord record);

  /**
   * Starts (or extends) the parked sequence of {@code key} with {@code record}; its head is due at
   * {@code dueAt}.
   */
  void park(
      String consumer, String key, ParkedRecord record, int attempts, Instant dueAt, String error);

  /**
   * Leases up to {@code limit} keys whose head is due at {@code now} and not leased by someone
   * else, for {@code lease}; returns them. Only the lessee retries a key.
   */
  List<String> claimDue(String consumer, Instant now, Duration lease, int limit);

  /** The parked records of {@code key}, oldest first. */
  List<Parked> sequence(String consumer, String key);

  /** Removes a parked record (applied, or dead-lettered). */
  void remove(long id);

  /**
   * Records a failed retry of the head {@code id}: attempts so far, when it is due again, the
   * error; ends the lease.
   */
  void reschedule(String consumer, String key, long id, int attempts, Instant dueAt, String error);

  /** Ends the lease on {@code key} without changing anything else. */
  void release(String consumer, String key);

  /** Number of parked records of {@code consumer}. */
  long count(String consumer);

  /** A record as read from the broker, byte-identical. */
  record ParkedRecord(
      String topic,
      int partition,
      long offset,
      byte[] key,
      byte[] value,
      List<DeadLetterStore.Header> headers) {}

  /** A stored parked record. */
  record Parked(long id, String key, ParkedRecord record, int attempts, Instant dueAt) {}
}
