package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import java.util.List;

/**
 * Postbox on RabbitMQ: the polling relay (its defaults) with publisher confirms to the shard
 * queues, then our {@code EFFECTIVELY_ONCE} batch consumer; its receipt is the client reading the
 * delivery ({@link DeliveryReceipts}).
 */
final class E2eRabbitPollingPipeline implements E2ePipeline {

  private final E2eRabbit rabbit = new E2eRabbit(key());

  @Override
  public String key() {
    return "rabbit_polling";
  }

  @Override
  public String how() {
    return E2eRabbit.RELAY_HOW + " -> " + E2eRabbitConsumers.OURS_HOW;
  }

  @Override
  public List<String> hops() {
    return E2eRabbit.HOPS;
  }

  @Override
  public AutoCloseable broker() {
    return rabbit.broker();
  }

  @Override
  public String topic(BenchEnv env) throws Exception {
    return rabbit.topic();
  }

  @Override
  public AutoCloseable start(BenchEnv env, Db db, String topic, E2eTimes times) throws Exception {
    return rabbit.start(
        rabbit.relay(db, times),
        topic,
        () -> E2eRabbitConsumers.ours(rabbit.uri(), db, rabbit.subscription(), topic, times));
  }
}
