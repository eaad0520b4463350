package dev.postbox.jdbc.internal;

import dev.postbox.core.codec.StoredText;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * One row of {@code postbox_replay_audit} per operator action, written in the action's own
 * transaction (so the action and its record commit together, or neither), with the structured
 * columns of migration V12.
 */
public final class OperatorAudit {

  private static final String INSERT =
      "INSERT INTO postbox_replay_audit (by_whom, what, how_many, action, reason, dead_letter_id,"
          + " message_id, new_message_id, consumer, msg_key, outbox_position)"
          + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

  private OperatorAudit() {}

  /**
   * What one audit row says.
   *
   * @param by who acted
   * @param what a readable description of the subject
   * @param howMany how many records the action changed
   * @param action REPLAY, DISCARD, EDIT, RELEASE_PARKED, SKIP_PARKED, RETRY_BLOCKED or SKIP_BLOCKED
   * @param reason why (required for discards and skips)
   */
  public record Entry(
      String by,
      String what,
      int howMany,
      String action,
      Optional<String> reason,
      Optional<Long> deadLetterId,
      Optional<UUID> messageId,
      Optional<UUID> newMessageId,
      Optional<String> consumer,
      Optional<String> key,
      Optional<Long> outboxPosition) {

    public Entry {
      Objects.requireNonNull(by, "by");
      Objects.requireNonNull(what, "what");
      Objects.requireNonNull(action, "action");
    }

    /** An entry with only the required fields; add the rest with the withers. */
    public static Entry of(String by, String action, String what, int howMany) {
      return new Entry(
          by,
          what,
          howMany,
          action,
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty());
    }

    public Entry reason(String r) {
      return new Entry(
          by,
          what,
          howMany,
          action,
          Optional.ofNullable(r),
          deadLetterId,
          messageId,
          newMessageId,
          consumer,
          key,
          outboxPosition);
    }

    public Entry deadLetter(long id, Optional<UUID> message, String consumerName, String k) {
      return new Entry(
          by,
          what,
          howMany,
          action,
          reason,
          Optional.of(id),
          message,
          newMessageId,
          Optional.ofNullable(consumerName),
          Optional.ofNullable(k),
          outboxPosition);
    }

    public Entry newMessage(UUID id) {
      return new Entry(
          by,
          what,
          howMany,
          action,
          reason,
          deadLetterId,
          messageId,
          Optional.of(id),
          consumer,
          key,
          outboxPosition);
    }

    public Entry parked(String consumerName, String k) {
      return new Entry(
          by,
          what,
          howMany,
          action,
          reason,
          deadLetterId,
          messageId,
          newMessageId,
          Optional.of(consumerName),
          Optional.of(k),
          outboxPosition);
    }

    public Entry outbox(long position, Optional<UUID> message, Optional<String> k) {
      return new Entry(
          by,
          what,
          howMany,
          action,
          reason,
          deadLetterId,
          message,
          newMessageId,
          consumer,
          k,
          Optional.of(position));
    }
  }

  /** Writes {@code e} on {@code c} (in the caller's transaction). */
  public static void write(Connection c, Entry e) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      ps.setString(1, StoredText.encode(e.by()));
      ps.setString(2, StoredText.encode(e.what()));
      ps.setInt(3, e.howMany());
      ps.setString(4, e.action());
      ps.setString(5, StoredText.encode(e.reason().orElse(null)));
      ps.setObject(6, e.deadLetterId().orElse(null), Types.BIGINT);
      ps.setObject(7, e.messageId().orElse(null), Types.OTHER);
      ps.setObject(8, e.newMessageId().orElse(null), Types.OTHER);
      ps.setString(9, StoredText.encode(e.consumer().orElse(null)));
      ps.setString(10, StoredText.encode(e.key().orElse(null)));
      ps.setObject(11, e.outboxPosition().orElse(null), Types.BIGINT);
      ps.executeUpdate();
    }
  }
}
