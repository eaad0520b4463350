package dev.postbox.rabbitmq;

import com.rabbitmq.client.ShutdownSignalException;
import dev.postbox.core.engine.TransportBinding;

/**
 * What the consumer engine needs to know about RabbitMQ: the messaging-system name {@code
 * rabbitmq}, the span attribute {@code messaging.rabbitmq.message.delivery_tag}, and that a lost
 * channel or connection ({@link ShutdownSignalException}, which {@code AlreadyClosedException}
 * extends) is transient.
 */
final class RabbitBinding {

  /** RabbitMQ's binding to the consumer engine. */
  static final TransportBinding TRANSPORT =
      new TransportBinding(
          "rabbitmq", "messaging.rabbitmq.message.delivery_tag", RabbitBinding::retriable);

  private RabbitBinding() {}

  /** Whether {@code error} (one throwable of a cause chain) is a transient RabbitMQ error. */
  static boolean retriable(Throwable error) {
    return error instanceof ShutdownSignalException;
  }
}
