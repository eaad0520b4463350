package dev.postbox.core.spi;

import dev.postbox.core.Payload;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
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
   * What {@link #processOnceWithResult} did: its outcome and the result stored with the id (for
   * {@link Outcome#APPLIED} the one the work just returned; for {@link Outcome#DUPLICATE} the one
   * the first delivery stored; empty when none was stored, and for {@link Outcome#CONFLICT}).
   */
  record Processed(Outcome outcome, Optional<Payload> result) {
    public Processed {
      java.util.Objects.requireNonNull(outcome, "outcome");
      java.util.Objects.requireNonNull(result, "result");
    }
  }

  /**
   * Like {@link #processOnce(String, UUID, byte[], Work)}, and also stores the result the work
   * returns (business-level idempotency): on the id's row, in the same transaction, so it commits
   * with the effect or not at all. A duplicate gets the stored result back without running the
   * work.
   *
   * <p>The default is for stores that keep no results: it runs the work as {@code processOnce} does
   * and, if the work returned a result, throws {@link UnsupportedOperationException} inside the
   * transaction (rolled back: nothing is recorded), so a result is never silently lost.
   */
  default Processed processOnceWithResult(
      String consumer, UUID messageId, byte[] payloadSha256, ResultWork work) throws Exception {
    Outcome outcome =
        processOnce(
            consumer,
            messageId,
            payloadSha256,
            c -> {
              if (work.run(c).isPresent()) {
                throw new UnsupportedOperationException(
                    getClass().getName()
                        + " does not store results; the handler of message "
                        + messageId
                        + " recorded one (use a store that does, such as PostgresInboxStore)");
              }
            });
    return new Processed(outcome, Optional.empty());
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

  /**
   * The effect of one message on the inbox transaction's connection, returning the result to store
   * with its id (empty: none).
   */
  @FunctionalInterface
  interface ResultWork {
    Optional<Payload> run(Connection connection) throws Exception;
  }

  /** The effect of a batch, on the inbox transaction's connection, for the ids not seen before. */
  @FunctionalInterface
  interface BatchWork {
    void run(Connection connection, Set<UUID> freshIds) throws Exception;
  }
}
