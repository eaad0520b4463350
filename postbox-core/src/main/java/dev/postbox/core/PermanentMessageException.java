package dev.postbox.core;

/**
 * A message that can never be processed, however often it is retried: malformed bytes, a schema
 * version nobody can read, a business rule that rejects it for good.
 *
 * <p>Retry policies must not retry it; consumers route the message to a dead-letter topic (or
 * equivalent) straight away and move on. Test for it with {@code instanceof
 * PermanentMessageException}, never by message text.
 *
 * <p>Handlers may throw it (or a subclass) themselves to mark a message as poison. Effectively
 * immutable once thrown.
 */
public class PermanentMessageException extends PostboxException {

  /** A permanent failure with a message. */
  public PermanentMessageException(String message) {
    super(message);
  }

  /** A permanent failure with a message and the underlying cause (may be {@code null}). */
  public PermanentMessageException(String message, Throwable cause) {
    super(message, cause);
  }
}
