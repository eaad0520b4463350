package dev.postbox.core.reply;

import dev.postbox.core.PostboxException;
import java.util.UUID;

/**
 * A request was refused because the requester already has its maximum of requests in flight
 * (back-pressure: nothing was sent; send it again when earlier ones have finished).
 */
public class RequesterBusyException extends PostboxException {

  /** Refused request {@code requestId}: {@code maxInFlight} requests are in flight. */
  public RequesterBusyException(UUID requestId, int maxInFlight) {
    super(
        "request "
            + requestId
            + " refused: "
            + maxInFlight
            + " requests are in flight (the requester's maxInFlight); nothing was sent");
  }
}
