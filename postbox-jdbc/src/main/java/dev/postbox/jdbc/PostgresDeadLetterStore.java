package dev.postbox.jdbc;

import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.internal.PostgresDeadLetterStoreImpl;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The {@link DeadLetterStore} on PostgreSQL: dead letters in {@code postbox_dead_letter}, created
 * by {@link PostboxMigrations} version 3.
 *
 * <pre>{@code
 * DeadLetterStore deadLetters = PostgresDeadLetterStore.create(dataSource);
 * List<DeadLetter> failing = deadLetters.query(new Query(Optional.of("billing"), Optional.empty(),
 *     Optional.empty(), Optional.empty(), Optional.of(Status.PENDING), Optional.empty(),
 *     Optional.empty(), 100));
 * }</pre>
 *
 * <p><b>Byte-identical.</b> The record's key and value are stored as {@code bytea} (null stays
 * null), the headers as two parallel arrays of names and values, so their order, duplicate names
 * and null values come back exactly as they were added.
 *
 * <p><b>Status.</b> A letter is added {@code PENDING}; {@link DeadLetterStore#markReplayed} and
 * {@link DeadLetterStore#discard} move a {@code PENDING} letter to {@code REPLAYED} or {@code
 * DISCARDED} (each in its own transaction; the {@link Replayer} does it in the transaction that
 * writes the message to the outbox). Either throws {@link java.util.NoSuchElementException} for an
 * unknown id and {@link IllegalStateException} for a letter that is not {@code PENDING}.
 *
 * <p><b>Replay count.</b> When a letter is added for a message (consumer and message id) that has
 * earlier letters, it starts with the highest replay count of those letters, so a message that
 * keeps failing after being replayed reaches the {@link Replayer}'s maximum instead of looping.
 *
 * <p><b>Queries</b> return the oldest first (first failure, then id); the limit must be between 1
 * and {@value #MAX_LIMIT}. The key filter matches the key bytes equal to the UTF-8 encoding of the
 * given text. {@link DeadLetterStore#purge} deletes by last failure, measured by the database's
 * clock. Failures of the database throw {@link DeadLetterException}.
 *
 * <p>No options (so no defaults). Thread-safe.
 */
public final class PostgresDeadLetterStore {

  /** The most rows one query returns. */
  public static final int MAX_LIMIT = 10_000;

  private PostgresDeadLetterStore() {}

  /**
   * A dead-letter store on {@code dataSource}; checks that the dead-letter tables exist in the data
   * source's current schema.
   *
   * @throws DeadLetterException if they do not (run {@link PostboxMigrations#migrate} first) or the
   *     database cannot be reached
   */
  public static DeadLetterStore create(DataSource dataSource) {
    return new PostgresDeadLetterStoreImpl(Objects.requireNonNull(dataSource, "dataSource"));
  }
}
