package dev.postbox.kafka;

import dev.postbox.core.engine.TransportBinding;
import org.apache.kafka.common.errors.RetriableException;

/**
 * What the consumer engine needs to know about Kafka: the messaging-system name {@code kafka}, the
 * span attribute {@code messaging.kafka.offset}, and that Kafka's {@link RetriableException} (and
 * its subclasses, such as {@code NotLeaderOrFollowerException}) is transient.
 */
final class KafkaBinding {

  /** Kafka's binding to the consumer engine. */
  static final TransportBinding TRANSPORT =
      new TransportBinding("kafka", "messaging.kafka.offset", KafkaBinding::retriable);

  private KafkaBinding() {}

  /** Whether {@code error} (one throwable of a cause chain) is one of Kafka's retriable errors. */
  static boolean retriable(Throwable error) {
    return error instanceof RetriableException;
  }
}
