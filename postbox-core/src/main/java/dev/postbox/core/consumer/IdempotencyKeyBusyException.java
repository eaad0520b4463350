package dev.postbox.core.consumer;

import dev.postbox.core.PostboxException;

/**
 * A {@code DEDUPLICATED} delivery waited a whole lease for another holder of its message id and the
 * id is still held (the other holder is slow, or a newer holder claimed it after an expiry). The
 * effect was not run; the failure is transient and the retry policy decides when to try again.
 */
public class IdempotencyKeyBusyException extends PostboxException {
  public IdempotencyKeyBusyException(String message) {
    super(message);
  }
}
