package dev.postbox.rabbitmq;

import dev.postbox.core.PostboxException;

/**
 * The broker returned a mandatory message: no queue is bound to its topic's exchange, so every
 * message of the topic would come back alike until someone declares the subscription's queues.
 */
public class RabbitUnroutableException extends PostboxException {
  /** An exception with the broker's reply. */
  public RabbitUnroutableException(String message) {
    super(message);
  }
}
