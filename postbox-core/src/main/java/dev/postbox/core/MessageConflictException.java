package dev.postbox.core;

import java.util.UUID;

/**
 * A message arrived with an id the inbox already recorded, but with a different payload: the id was
 * reused for other content (a producer bug, or a forged id). Postbox never applies such a copy
 * silently; it is dead-lettered with the classification {@code CONFLICT} and this class's name as
 * its error class, so an operator can tell it from every other failure.
 *
 * <p>Permanent: retrying it cannot help. Effectively immutable once thrown.
 */
public final class MessageConflictException extends PermanentMessageException {

  private final UUID messageId;

  /** A conflict for message {@code messageId} of type {@code type}. */
  public MessageConflictException(UUID messageId, String type) {
    super(
        "message "
            + messageId
            + " ("
            + type
            + ") was applied before with a different payload; this copy is not applied");
    this.messageId = messageId;
  }

  /** The id that was reused. */
  public UUID messageId() {
    return messageId;
  }
}
