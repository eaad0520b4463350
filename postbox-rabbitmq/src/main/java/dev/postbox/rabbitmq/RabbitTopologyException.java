package dev.postbox.rabbitmq;

import dev.postbox.core.PostboxException;

/**
 * The broker refused a declaration: an exchange or queue exists with other arguments (type, quorum,
 * single active consumer, the shard count), an older Postbox's consistent-hash exchange is in the
 * way, or access is denied.
 */
public class RabbitTopologyException extends PostboxException {
  /** An exception naming what was declared, with the broker's answer as cause. */
  public RabbitTopologyException(String message, Throwable cause) {
    super(message, cause);
  }
}
