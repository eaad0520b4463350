package dev.postbox.core.reply;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import java.util.Objects;
import java.util.UUID;

/**
 * The answer to a request: the reply message as it arrived (its correlation id is the request's id,
 * its causation id too), with the request's id. Immutable.
 *
 * @param requestId the id of the request this answers
 * @param message the reply message
 */
public record Reply(UUID requestId, Message message) {

  public Reply {
    Objects.requireNonNull(requestId, "requestId");
    Objects.requireNonNull(message, "message");
  }

  /** The reply's payload (the responder's stored result). */
  public Payload payload() {
    return message.payload();
  }
}
