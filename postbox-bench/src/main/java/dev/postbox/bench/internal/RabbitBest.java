package dev.postbox.bench.internal;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import java.sql.PreparedStatement;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;

/**
 * The consumers' settings the RabbitMQ figures share ({@link RabbitBench}, {@link E2eRace}): our
 * {@code EFFECTIVELY_ONCE} consumer in batches, and Spring AMQP's listener container at its best (a
 * batch listener with one JDBC transaction per batch, one container per shard queue).
 */
final class RabbitBest {

  /** Shard queues per topic. */
  static final int SHARDS = 4;

  /** Prefetch per shard queue's channel, ours and Spring's. */
  static final int PREFETCH = 250;

  /** Messages per batch, ours and Spring's. */
  static final int BATCH = 100;

  /** Our subscription's concurrency (key order). */
  static final int CONCURRENCY = 32;

  private static final String INSERT_EFFECT = "INSERT INTO bench_effect VALUES (?, ?, ?)";

  private RabbitBest() {}

  /**
   * Our {@code EFFECTIVELY_ONCE} subscription {@code name} on {@code topic}, key order, concurrency
   * {@value #CONCURRENCY}; in batches of {@value #BATCH} when {@code batch}.
   */
  static Subscription eoSubscription(String name, String topic, boolean batch) {
    return Subscription.builder(name)
        .topics(topic)
        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
        .concurrency(CONCURRENCY)
        .batchSize(batch ? BATCH : 1)
        .build();
  }

  /**
   * The batch handler of our consumer: the deliveries' effect rows ({@code consumer}, message id,
   * key) as one JDBC batch on the inbox's transaction.
   */
  static BatchHandler effects(String consumer) {
    return deliveries -> {
      if (deliveries.isEmpty()) {
        return; // every one a duplicate
      }
      try (PreparedStatement ps =
          deliveries.get(0).connection().orElseThrow().prepareStatement(INSERT_EFFECT)) {
        for (Delivery d : deliveries) {
          ps.setString(1, consumer);
          ps.setObject(2, d.message().id());
          ps.setString(3, d.message().key().orElse(null));
          ps.addBatch();
        }
        ps.executeBatch();
      }
    };
  }

  /**
   * Spring's container on one shard queue at its best: one consumer (the queue's order), prefetch
   * {@value #PREFETCH}, consumer-side batches of {@value #BATCH} for a batch listener; acks after
   * the listener returned (AUTO). The listener is the caller's.
   */
  static SimpleMessageListenerContainer springBatch(ConnectionFactory cf, String queue) {
    SimpleMessageListenerContainer c = new SimpleMessageListenerContainer(cf);
    c.setQueueNames(queue);
    c.setConcurrentConsumers(1);
    c.setPrefetchCount(PREFETCH);
    c.setConsumerBatchEnabled(true);
    c.setBatchSize(BATCH);
    return c;
  }
}
