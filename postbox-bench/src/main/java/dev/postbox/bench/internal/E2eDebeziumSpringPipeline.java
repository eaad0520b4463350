package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.testkit.ChildJvm;
import java.util.Locale;

/**
 * The peer pipeline at its best: Debezium's embedded connector in its child JVM in its low-latency
 * configuration ({@link DebeziumPeer#LOW_LATENCY}) to Kafka, then Spring Kafka's batch listener
 * writing the same dedupe row and effect per message in one transaction per poll batch.
 */
final class E2eDebeziumSpringPipeline implements E2ePipeline {

  private final BenchConfig config;

  E2eDebeziumSpringPipeline(BenchConfig config) {
    this.config = config;
  }

  @Override
  public String key() {
    return "debezium_spring";
  }

  @Override
  public String how() {
    return DebeziumPeer.LOW_LATENCY_SETTINGS + " -> Kafka -> " + E2eConsumers.SPRING_HOW;
  }

  @Override
  public AutoCloseable start(BenchEnv env, Db db, String topic, E2eTimes times) throws Exception {
    String slot = "bench_" + db.schema().toLowerCase(Locale.ROOT) + "_e2edbz";
    ChildJvm child = new DebeziumPeer(env, config).startStreaming(db, slot);
    AutoCloseable consumer;
    try {
      consumer = E2eConsumers.spring(env, db, topic, times);
    } catch (Exception e) {
      child.close();
      Slots.drop(db, slot);
      throw e;
    }
    return () -> {
      try (child) {
        consumer.close();
        if (!child.isAlive()) {
          throw new IllegalStateException("the Debezium child exited:\n" + child.logTail(40));
        }
      }
      Slots.drop(db, slot);
    };
  }
}
