package dev.postbox.core.reply;

import dev.postbox.core.PermanentMessageException;

/**
 * A request a responder cannot answer however often it is retried: it names no reply address
 * (header {@link RequestReplyHeaders#REPLY_TO}) or carries no correlation id. Dead-lettered at its
 * first attempt with this reason, never retried in a loop.
 */
public class InvalidRequestException extends PermanentMessageException {

  /** An invalid request, with the reason. */
  public InvalidRequestException(String message) {
    super(message);
  }
}
