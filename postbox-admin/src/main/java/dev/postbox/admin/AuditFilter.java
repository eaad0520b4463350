package dev.postbox.admin;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * Which audit rows to list; empty fields match everything.
 *
 * @param actor who acted
 * @param action the action name
 * @param deadLetterId the dead letter acted on
 * @param messageId the message acted on (or the original of an edited copy)
 * @param from at or after
 * @param to before
 */
public record AuditFilter(
    Optional<String> actor,
    Optional<String> action,
    Optional<Long> deadLetterId,
    Optional<UUID> messageId,
    Optional<Instant> from,
    Optional<Instant> to) {

  public AuditFilter {
    Objects.requireNonNull(actor, "actor");
    Objects.requireNonNull(action, "action");
    Objects.requireNonNull(deadLetterId, "deadLetterId");
    Objects.requireNonNull(messageId, "messageId");
    Objects.requireNonNull(from, "from");
    Objects.requireNonNull(to, "to");
  }

  /** Every row. */
  public static AuditFilter all() {
    return new AuditFilter(
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty());
  }

  /** This filter for one dead letter. */
  public AuditFilter deadLetter(long id) {
    return new AuditFilter(actor, action, Optional.of(id), messageId, from, to);
  }

  /** This filter for one actor. */
  public AuditFilter actor(String who) {
    return new AuditFilter(Optional.of(who), action, deadLetterId, messageId, from, to);
  }
}
