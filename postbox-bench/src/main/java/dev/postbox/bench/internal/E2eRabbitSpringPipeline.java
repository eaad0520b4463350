package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import java.util.List;

/**
 * The peer on RabbitMQ at its best: the same polling relay with publisher confirms to the same
 * shard queues, then Spring AMQP's batch listener writing the same dedupe row and effect per
 * message in one JDBC transaction per batch, acking after the commit ({@link
 * E2eRabbitConsumers#SPRING_HOW}).
 */
final class E2eRabbitSpringPipeline implements E2ePipeline {

  private final E2eRabbit rabbit = new E2eRabbit(key());

  @Override
  public String key() {
    return E2eReport.RABBIT_PEER;
  }

  @Override
  public String how() {
    return E2eRabbit.RELAY_HOW + " -> " + E2eRabbitConsumers.SPRING_HOW;
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
        () -> E2eRabbitConsumers.spring(rabbit.uri(), db, rabbit.subscription(), topic, times));
  }
}
