package dev.postbox.jdbc;

import dev.postbox.core.Message;
import dev.postbox.core.MessageId;
import dev.postbox.core.Payload;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.jdbc.internal.OperatorAudit;
import dev.postbox.jdbc.internal.PostgresDeadLetterStoreImpl;
import dev.postbox.jdbc.internal.PostgresDeadLetterStoreImpl.Locked;
import dev.postbox.jdbc.internal.ReplayCopy;
import dev.postbox.jdbc.internal.ReplayTracing;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactions that change one dead letter for one operator — replay it, discard it, replace it
 * by a corrected copy — each with its {@code postbox_replay_audit} row in the same transaction.
 * {@link Replayer} exposes them, paces them and gathers the outcomes; this class does them.
 * Stateless beyond its settings and actor.
 */
final class LetterActions {

  private static final Logger log = LoggerFactory.getLogger(LetterActions.class);

  // A row that holds its key (V9) is left alone: deleting it would release the key without an
  // operator's retry or skip (and it was never published, so no dead letter should carry its id).
  private static final String FREE_MESSAGE_ID =
      "DELETE FROM postbox_outbox WHERE message_id = ?"
          + " AND (published_at IS NOT NULL OR failed_at IS NOT NULL) AND hold IS NULL";

  /** What became of one letter. */
  enum Outcome {
    REPLAYED,
    SKIPPED,
    FAILED
  }

  private final DataSource dataSource;
  private final Function<DeadLetter, Message> decoder;
  private final int maxReplays;
  private final String by;
  private final io.opentelemetry.api.OpenTelemetry openTelemetry;
  private final Outbox outbox = Outbox.postgres();

  LetterActions(
      DataSource dataSource,
      Function<DeadLetter, Message> decoder,
      int maxReplays,
      String by,
      io.opentelemetry.api.OpenTelemetry openTelemetry) {
    this.dataSource = dataSource;
    this.decoder = decoder;
    this.maxReplays = maxReplays;
    this.by = by;
    this.openTelemetry = openTelemetry;
  }

  /**
   * Replays {@code letter} to the consumers {@code route} names, after {@code awaitTurn} (called
   * only when something is to be written). A letter not {@code PENDING} or replayed too often is
   * skipped; one whose message cannot be decoded, or whose write fails, is failed and stays {@code
   * PENDING}.
   */
  Outcome replay(DeadLetter letter, String what, ReplayRoute route, Runnable awaitTurn) {
    if (letter.status() != Status.PENDING) {
      return Outcome.SKIPPED;
    }
    if (letter.replays() >= maxReplays) {
      log.warn(
          "not replaying {}: it was replayed {} times already (maximum {})",
          what,
          letter.replays(),
          maxReplays);
      return Outcome.SKIPPED;
    }
    Optional<Message> decoded = decode(letter, what);
    if (decoded.isEmpty()) {
      return Outcome.FAILED;
    }
    boolean broadcast = route == ReplayRoute.BROADCAST;
    String consumer = letter.letter().consumer();
    Message message =
        ReplayCopy.stamped(
            decoded.get(), letter.id(), by, broadcast ? Optional.empty() : Optional.of(consumer));
    awaitTurn.run();
    try {
      Outcome o = write(letter, what, message, broadcast);
      if (broadcast && o == Outcome.REPLAYED) {
        log.warn(
            "{} by {} was a broadcast replay: every consumer of topic '{}' receives message {}"
                + " again, and those without an inbox, or whose dedupe record expired, apply it"
                + " twice (a targeted replay reaches consumer '{}' only)",
            what,
            by,
            message.topic(),
            message.id(),
            consumer);
      }
      return o;
    } catch (RuntimeException e) {
      log.warn("replaying {} (message {}) failed; it stays PENDING", what, message.id(), e);
      return Outcome.FAILED;
    }
  }

  /** Discards {@code letter} with {@code reason} and audits it, in one transaction. */
  void discard(DeadLetter letter, String reason) {
    String what = "dead letter " + letter.id();
    outbox.inTransaction(
        dataSource,
        tx -> {
          PostgresDeadLetterStoreImpl.discard(tx.connection(), letter.id(), by, reason);
          OperatorAudit.write(
              tx.connection(),
              subject(OperatorAudit.Entry.of(by, "DISCARD", what, 1), letter).reason(reason));
          return null;
        });
  }

  /**
   * The corrected copy of {@code letter}'s message that {@link Replayer#editAsCopy} writes: a new
   * id, the original as causation and in {@link Replayer#COPY_OF_HEADER}, targeted at the letter's
   * consumer.
   *
   * @throws IllegalStateException if the letter is not {@code PENDING} or cannot be decoded
   */
  Message correctedCopy(DeadLetter letter, byte[] payload, Optional<String> contentType) {
    long id = letter.id();
    if (letter.status() != Status.PENDING) {
      throw new IllegalStateException(
          "dead letter " + id + " is " + letter.status() + ", so it cannot be edited");
    }
    Message original;
    try {
      original = Objects.requireNonNull(decoder.apply(letter), "the decoder returned no message");
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          "dead letter " + id + " cannot be edited: its message cannot be decoded (" + e + ")", e);
    }
    return ReplayCopy.stamped(
        original.toBuilder()
            .id(MessageId.next())
            .causationId(original.id().toString())
            .header(Replayer.COPY_OF_HEADER, original.id().toString())
            .payload(new Payload(payload, contentType.orElse(original.payload().contentType())))
            .build(),
        id,
        by,
        Optional.of(letter.letter().consumer()));
  }

  /**
   * In one transaction: discards {@code letter} as replaced by {@code copy}, writes the copy to the
   * outbox and audits the edit.
   */
  UUID replaceByCopy(DeadLetter letter, Message copy, String reason) {
    String what = "dead letter " + letter.id();
    outbox.inTransaction(
        dataSource,
        tx -> {
          Connection c = tx.connection();
          PostgresDeadLetterStoreImpl.discard(
              c, letter.id(), by, "replaced by corrected copy " + copy.id() + ": " + reason);
          tx.write(ReplayTracing.traced(openTelemetry, "postbox edit", copy, letter, by));
          OperatorAudit.write(
              c,
              subject(OperatorAudit.Entry.of(by, "EDIT", what, 1), letter)
                  .reason(reason)
                  .newMessage(copy.id()));
          return null;
        });
    return copy.id();
  }

  /** The letter's message, or empty (logged) when the decoder cannot give the letter's message. */
  private Optional<Message> decode(DeadLetter letter, String what) {
    Message message;
    try {
      message = decoder.apply(letter);
    } catch (RuntimeException e) {
      log.warn("not replaying {}: its message cannot be decoded", what, e);
      return Optional.empty();
    }
    if (message == null) {
      log.warn("not replaying {}: the decoder returned no message", what);
      return Optional.empty();
    }
    Optional<UUID> expected = letter.letter().messageId();
    if (expected.isPresent() && !expected.get().equals(message.id())) {
      log.warn(
          "not replaying {}: the decoder returned message {} instead of {}",
          what,
          message.id(),
          expected.get());
      return Optional.empty();
    }
    return Optional.of(message);
  }

  /**
   * In one transaction: locks the letter, writes {@code message} to the outbox if the letter is
   * still replayable, marks it replayed and audits it (a broadcast with its reason).
   */
  private Outcome write(DeadLetter letter, String what, Message message, boolean broadcast) {
    return outbox.inTransaction(
        dataSource,
        tx -> {
          Connection c = tx.connection();
          Optional<Locked> locked = PostgresDeadLetterStoreImpl.lock(c, letter.id());
          if (locked.isEmpty()
              || locked.get().status() != Status.PENDING
              || locked.get().replays() >= maxReplays) {
            return Outcome.SKIPPED; // changed since it was read; nothing written
          }
          try (PreparedStatement ps = c.prepareStatement(FREE_MESSAGE_ID)) {
            ps.setObject(1, message.id());
            ps.executeUpdate();
          }
          // marked first, so the trace reads "replayed" before the row it wrote (same transaction)
          PostgresDeadLetterStoreImpl.markReplayed(c, letter.id(), by);
          tx.write(ReplayTracing.traced(openTelemetry, "postbox replay", message, letter, by));
          OperatorAudit.Entry audit =
              subject(OperatorAudit.Entry.of(by, "REPLAY", what, 1), letter);
          OperatorAudit.write(c, broadcast ? audit.reason(broadcastReason(message)) : audit);
          return Outcome.REPLAYED;
        });
  }

  /** The audit reason of a broadcast replay of {@code message}. */
  private static String broadcastReason(Message message) {
    return "broadcast: every consumer of topic '"
        + message.topic()
        + "' receives message "
        + message.id()
        + " again";
  }

  private static OperatorAudit.Entry subject(OperatorAudit.Entry e, DeadLetter letter) {
    byte[] key = letter.letter().key();
    return e.deadLetter(
        letter.id(),
        letter.letter().messageId(),
        letter.letter().consumer(),
        key == null ? null : new String(key, StandardCharsets.UTF_8));
  }
}
