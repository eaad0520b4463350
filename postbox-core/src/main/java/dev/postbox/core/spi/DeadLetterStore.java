package dev.postbox.core.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * Where messages that could not be applied are kept, byte-identical, with why they failed. {@code
 * postbox-jdbc} implements it for PostgreSQL.
 *
 * <p>Implementations must be thread-safe.
 */
public interface DeadLetterStore {

  /** Stores a dead letter and returns its id. */
  long add(NewDeadLetter letter);

  /** The dead letter with {@code id}, if any. */
  Optional<DeadLetter> find(long id);

  /** Dead letters matching {@code query}, oldest first. */
  List<DeadLetter> query(Query query);

  /**
   * Marks a dead letter replayed (after its message was written to the outbox again); counts
   * replays.
   */
  void markReplayed(long id, String by);

  /** Marks a dead letter discarded, with a reason. */
  void discard(long id, String by, String reason);

  /**
   * Deletes up to {@code limit} dead letters older than {@code age} (by last failure); returns how
   * many.
   */
  int purge(Duration age, int limit);

  /** Status of a dead letter. */
  enum Status {
    PENDING,
    REPLAYED,
    DISCARDED
  }

  /** How a failure was classified when it was given up. */
  enum Classification {
    /**
     * Never retried: undecodable, invalid, rejected tenant, unknown version, {@code abortOn}
     * exceptions.
     */
    PERMANENT,
    /** Transient, but the retry policy's attempts or time ran out. */
    RETRIES_EXHAUSTED,
    /** The same message id arrived with a different payload. */
    CONFLICT
  }

  /** One record header, name and raw bytes (order and duplicates kept). */
  record Header(String name, byte[] value) {
    public Header {
      Objects.requireNonNull(name, "name");
      value = value == null ? null : value.clone();
    }

    @Override
    public byte[] value() {
      return value == null ? null : value.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Header h && name.equals(h.name) && Arrays.equals(value, h.value);
    }

    @Override
    public int hashCode() {
      return 31 * name.hashCode() + Arrays.hashCode(value);
    }
  }

  /**
   * A dead letter to store.
   *
   * @param consumer the subscription that gave up
   * @param topic origin topic
   * @param partition origin partition
   * @param offset origin offset
   * @param messageId the message id, when the record could be decoded that far
   * @param type the message type, when known
   * @param key the record key bytes, exactly as read (null: no key)
   * @param value the record value bytes, exactly as read (null: tombstone)
   * @param headers the record headers, exactly as read, in order
   * @param classification why it was given up
   * @param errorClass the exception class name
   * @param errorMessage the exception message
   * @param stackTrace the stack trace
   * @param fingerprint groups similar failures (error class + normalised message + origin topic)
   * @param attempts how many attempts were made
   * @param firstFailure when the first attempt failed
   * @param lastFailure when the last attempt failed
   */
  record NewDeadLetter(
      String consumer,
      String topic,
      int partition,
      long offset,
      Optional<UUID> messageId,
      Optional<String> type,
      byte[] key,
      byte[] value,
      List<Header> headers,
      Classification classification,
      String errorClass,
      String errorMessage,
      String stackTrace,
      String fingerprint,
      int attempts,
      Instant firstFailure,
      Instant lastFailure) {}

  /** A stored dead letter: what was stored, plus its id, status and replay count. */
  record DeadLetter(long id, NewDeadLetter letter, Status status, int replays, Instant createdAt) {}

  /**
   * A filter; empty fields match everything.
   *
   * @param consumer subscription
   * @param topic origin topic
   * @param key record key as UTF-8 text
   * @param fingerprint failure group
   * @param status status
   * @param from first failure at or after
   * @param to first failure before
   * @param limit most rows returned
   */
  record Query(
      Optional<String> consumer,
      Optional<String> topic,
      Optional<String> key,
      Optional<String> fingerprint,
      Optional<Status> status,
      Optional<Instant> from,
      Optional<Instant> to,
      int limit) {

    /** Everything, up to {@code limit} rows. */
    public static Query all(int limit) {
      return new Query(
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          limit);
    }
  }
}
