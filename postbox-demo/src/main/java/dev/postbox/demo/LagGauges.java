package dev.postbox.demo;

/**
 * A transport's consumer-lag gauges, bound to the demo's registry: on Kafka the consumer group's
 * lag read from outside ({@code ConsumerLagProbe}), on RabbitMQ the inventory's shard queues
 * ({@code RabbitLagProbe}: ready messages, consumers, stalled).
 */
interface LagGauges extends AutoCloseable {

  /** Reads again before a scrape (Kafka: finds partitions the group committed since). */
  void refresh();

  @Override
  void close();
}
