package dev.postbox.kafka;

import dev.postbox.core.PostboxException;

/**
 * A {@code DEDUPLICATED} subscription would let completed message ids expire from its idempotency
 * store while its topic can still deliver their messages (idempotency TTL shorter than the topic's
 * {@code retention.ms}), so a redelivered message could be applied twice. Raise the TTL or, if old
 * messages can never come again, force it.
 */
public class IdempotencyTtlTooShortException extends PostboxException {
  public IdempotencyTtlTooShortException(String message) {
    super(message);
  }
}
