package dev.postbox.rabbitmq;

import dev.postbox.core.PostboxException;

/**
 * RabbitMQ refused or could not take a connection at start-up: wrong credentials, a vhost that does
 * not exist or is not allowed, or no broker at the address. Raised once, at start, instead of a
 * retry loop; its message names the address, the vhost and the broker's answer.
 */
public class RabbitStartupException extends PostboxException {
  /** An exception with the broker's (or the network's) answer as cause. */
  public RabbitStartupException(String message, Throwable cause) {
    super(message, cause);
  }
}
