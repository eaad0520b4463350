package dev.postbox.core.codec;

import dev.postbox.core.PostboxException;

/**
 * An object that cannot be encoded into a payload, for example because Jackson cannot serialize it.
 * A programming error on the producing side: no message was created, so nothing is retried or
 * dead-lettered.
 *
 * <p>Effectively immutable once thrown.
 */
public class EncodingException extends PostboxException {

  /** An encoding failure with a message and its cause. */
  public EncodingException(String message, Throwable cause) {
    super(message, cause);
  }
}
