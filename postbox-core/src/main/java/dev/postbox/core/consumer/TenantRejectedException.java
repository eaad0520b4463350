package dev.postbox.core.consumer;

import dev.postbox.core.PermanentMessageException;

/** A message's tenant is missing or not allowed for the subscription: a permanent failure. */
public class TenantRejectedException extends PermanentMessageException {
  public TenantRejectedException(String message) {
    super(message);
  }
}
