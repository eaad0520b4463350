package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRelayPublisher;

/** Postbox's polling relay (its defaults) to Kafka, then our effectively-once batch consumer. */
final class E2ePollingPipeline implements E2ePipeline {

  @Override
  public String key() {
    return "polling";
  }

  @Override
  public String how() {
    return "polling relay, defaults (the writers' NOTIFY wakes it, a poll every second otherwise,"
        + " idle grace) -> Kafka -> "
        + E2eConsumers.OURS_HOW;
  }

  @Override
  public AutoCloseable start(BenchEnv env, Db db, String topic, E2eTimes times) throws Exception {
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(db.dataSource()),
                KafkaRelayPublisher.builder(env.bootstrap()).build())
            .instanceId("bench-" + db.schema())
            .build();
    AutoCloseable consumer;
    try {
      relay.start();
      consumer = E2eConsumers.ours(env, db, topic, times);
    } catch (Exception e) {
      relay.close();
      throw e;
    }
    return () -> {
      try (relay) {
        consumer.close();
      }
    };
  }
}
