package dev.postbox.spring;

import java.util.Map;

/**
 * What a running consumer reports to the health indicator.
 *
 * @param healthy false when the consumer failed for good (Kafka: its poll loop died; RabbitMQ: it
 *     was closed) and must be replaced
 * @param details the transport's details (Kafka: {@code pollLoopAlive}, {@code partitions}, {@code
 *     inFlight}, {@code fenced}, {@code failure}; RabbitMQ: {@code connected}, {@code shards},
 *     {@code inFlight})
 */
public record ConsumerHealth(boolean healthy, Map<String, Object> details) {
  public ConsumerHealth {
    details = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(details));
  }
}
