package dev.postbox.core.spi;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The inbox of an {@code EFFECTIVELY_ONCE} consumer: the record that a consumer applied a message,
 * written in the same database transaction as the message's effect. {@code postbox-jdbc} implements
 * it for PostgreSQL.
 *
 * <p>The dedupe record is inserted <em>first</em>, under a unique constraint on {@code (consumer,
 * message id)}, and the effect runs afterwards on the same connection: a concurrent delivery of the
 * same id to another instance waits on that insert and then finds the id taken, so exactly one
 * effect commits. If the effect throws, the transaction rolls back and no dedupe record remains (so
 * a later retry can apply it).
 *
 * <p>Implementations must be thread-safe.
 */
public interface InboxStore {

  /**
   * In one transaction: records {@code messageId} as applied by {@code consumer}, then runs {@code
   * work} on the same connection, then commits. Returns {@code false}, without running {@code
   * work}, when the id was already recorded (a duplicate). If {@code work} throws, rolls back and
   * rethrows.
   */
  boolean processOnce(String consumer, UUID messageId, Work work) throws Exception;

  /** What {@link #processOnce(String, UUID, byte[], Work)} did. */
  enum Outcome {
    /** The id was new: recorded, and the work committed with it. */
    APPLIED,
    /** The id was recorded before with the same payload: nothing done. */
    DUPLICATE,
    /**
     * The id was recorded before with a different payload: nothing done; the caller treats it as a
     * conflict.
     */
    CONFLICT
  }

  /**
   * Like {@link #processOnce(String, UUID, Work)}, and also records {@code payloadSha256}; when the
   * id was recorded before with a different fingerprint the outcome is {@link Outcome#CONFLICT}
   * instead of a silent duplicate. The default ignores the fingerprint (stores without one report
   * no conflicts).
   */
  default Outcome processOnce(String consumer, UUID messageId, byte[] payloadSha256, Work work)
      throws Exception {
    return processOnce(consumer, messageId, work) ? Outcome.APPLIED : Outcome.DUPLICATE;
  }

  /**
   * In one transaction: records all {@code messageIds} for {@code consumer} in one statement, runs
   * {@code work} with the ids that were not yet recorded (possibly none: then {@code work} is not
   * called), then commits. Returns those fresh ids. If {@code work} throws, rolls back (no id
   * recorded) and rethrows.
   */
  Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work) throws Exception;

  /**
   * In the caller's transaction on {@code connection}: stores {@code version} for {@code entity} if
   * it is newer than the stored one and returns {@code true}; returns {@code false} (stores
   * nothing) if the stored version is equal or newer, so an older event never overwrites newer
   * state.
   */
  boolean advanceVersion(Connection connection, String entity, long version) throws Exception;

  /**
   * Deletes up to {@code limit} dedupe records of {@code consumer} older than {@code age}; returns
   * how many.
   */
  int purge(String consumer, Duration age, int limit);

  /** The effect of one message, on the inbox transaction's connection. */
  @FunctionalInterface
  interface Work {
    void run(Connection connection) throws Exception;
  }

  /** The effect of a batch, on the inbox transaction's connection, for the ids not seen before. */
  @FunctionalInterface
  interface BatchWork {
    void run(Connection connection, Set<UUID> freshIds) throws Exception;
  }
}
