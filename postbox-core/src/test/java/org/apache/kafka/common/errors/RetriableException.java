package org.apache.kafka.common.errors;

/**
 * Stand-in for Kafka's {@code RetriableException} (kafka-clients is not on postbox-core's
 * classpath): the retry policy recognises it by class name.
 */
public class RetriableException extends RuntimeException {
  public RetriableException(String message) {
    super(message);
  }
}
