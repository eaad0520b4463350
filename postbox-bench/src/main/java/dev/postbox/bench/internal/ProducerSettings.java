package dev.postbox.bench.internal;

import java.util.HashMap;
import java.util.Map;

/**
 * The producer settings every publisher in the benchmarks uses: {@code KafkaRelayPublisher}'s
 * defaults (acks=all, idempotence, linger 5 ms, 128 KiB batches, lz4). Depends on nothing but the
 * JDK, so the Debezium child JVM (which runs an older kafka-clients) can use it too.
 */
final class ProducerSettings {

  private ProducerSettings() {}

  /** The settings, as producer properties, for {@code bootstrap}. */
  static Map<String, Object> forBootstrap(String bootstrap) {
    Map<String, Object> p = new HashMap<>();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    p.put("enable.idempotence", true);
    p.put("linger.ms", 5);
    p.put("batch.size", 131_072);
    p.put("compression.type", "lz4");
    return p;
  }
}
