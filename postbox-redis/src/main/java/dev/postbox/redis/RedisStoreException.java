package dev.postbox.redis;

import dev.postbox.core.PostboxException;

/**
 * Redis could not be reached, or a command failed or timed out. Transient as far as a consumer's
 * retry policy is concerned: the lease protocol makes a retry safe.
 */
public class RedisStoreException extends PostboxException {
  public RedisStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
