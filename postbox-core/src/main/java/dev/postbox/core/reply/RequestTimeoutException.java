package dev.postbox.core.reply;

import dev.postbox.core.PostboxException;
import java.time.Duration;
import java.util.UUID;

/**
 * A request got no reply within its timeout. The request may still be processed (it stays in the
 * broker until the responder takes it); its reply then arrives late and goes to the requester's
 * late-reply listener, never to another caller. A retry of the request with the same message id
 * gets the same reply (the responder stores it with the request's inbox row).
 */
public class RequestTimeoutException extends PostboxException {

  private final UUID requestId;
  private final Duration timeout;

  /** A timeout of request {@code requestId} of {@code type} to {@code topic}. */
  public RequestTimeoutException(UUID requestId, String type, String topic, Duration timeout) {
    super(
        "request "
            + requestId
            + " ("
            + type
            + " to "
            + topic
            + ") got no reply within "
            + timeout
            + "; a late reply goes to the late-reply listener, a retry with the same id gets the"
            + " same reply");
    this.requestId = requestId;
    this.timeout = timeout;
  }

  /** The id of the request that timed out. */
  public UUID requestId() {
    return requestId;
  }

  /** The timeout it had. */
  public Duration timeout() {
    return timeout;
  }
}
