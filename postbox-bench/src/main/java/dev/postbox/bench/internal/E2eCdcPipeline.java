package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.time.Duration;
import java.util.Locale;

/** Postbox's CDC relay (its defaults) to Kafka, then our effectively-once batch consumer. */
final class E2eCdcPipeline implements E2ePipeline {

  @Override
  public String key() {
    return "cdc";
  }

  @Override
  public String how() {
    return "CDC relay, defaults (batch 2,000, 4 in flight, no batch linger, binary values;"
        + " producer acks=all, idempotent, lz4) -> Kafka -> "
        + E2eConsumers.OURS_HOW;
  }

  @Override
  public AutoCloseable start(BenchEnv env, Db db, String topic, E2eTimes times) throws Exception {
    String slot = "bench_" + db.schema().toLowerCase(Locale.ROOT) + "_e2e";
    CdcRelay relay =
        CdcRelay.builder(
                db.dataSource(),
                env.jdbcUrl(),
                KafkaRelayPublisher.builder(env.bootstrap()).build())
            .instanceId("bench-" + db.schema())
            .slotName(slot)
            .publicationName(slot + "_pub")
            .build();
    AutoCloseable consumer;
    try {
      relay.start();
      BenchEnv.awaitCount(
          "cdc relay active", () -> relay.active() ? 1 : 0, 1, Duration.ofSeconds(60));
      consumer = E2eConsumers.ours(env, db, topic, times);
    } catch (Exception e) {
      relay.close();
      Slots.drop(db, slot);
      throw e;
    }
    return () -> {
      try (relay) {
        consumer.close();
      }
      Slots.drop(db, slot);
    };
  }
}
