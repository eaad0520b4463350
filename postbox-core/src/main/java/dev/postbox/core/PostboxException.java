package dev.postbox.core;

/**
 * Base of the exceptions Postbox throws. Unchecked.
 *
 * <p>Subclasses name the condition; the ones a retry can never fix extend {@link
 * PermanentMessageException}, so that a retry policy can classify with a single {@code instanceof}.
 *
 * <p>Exceptions are not meant to be shared between threads while being built; once thrown they are
 * effectively immutable.
 */
public class PostboxException extends RuntimeException {

  /** An exception with a message. */
  public PostboxException(String message) {
    super(message);
  }

  /** An exception with a message and the underlying cause (may be {@code null}). */
  public PostboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
