package dev.postbox.jdbc;

import java.util.UUID;

/**
 * A message was written to the outbox with an id that is already there (or twice in one {@code
 * writeAll}). Message ids are unique: every message gets a fresh one, and a retried business
 * operation that should not publish twice is exactly what this refuses. The transaction is not
 * usable afterwards; roll it back.
 */
public final class DuplicateMessageIdException extends OutboxException {

  private final UUID messageId;

  /**
   * The write of {@code messageId} was refused; {@code cause} is the database's error (or null).
   */
  public DuplicateMessageIdException(UUID messageId, Throwable cause) {
    super(
        "message id " + messageId + " is already in the outbox; message ids must be unique", cause);
    this.messageId = messageId;
  }

  /** The duplicate id. */
  public UUID messageId() {
    return messageId;
  }
}
