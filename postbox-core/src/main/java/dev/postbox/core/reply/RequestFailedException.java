package dev.postbox.core.reply;

import dev.postbox.core.PostboxException;

/**
 * A request ended without a reply for another reason than its timeout: it could not be sent, or the
 * requester was closed while it was in flight. The message names the request.
 */
public class RequestFailedException extends PostboxException {

  /** A failure with its reason. */
  public RequestFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
