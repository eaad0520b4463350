package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.springframework.amqp.core.BatchMessageListener;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;

/**
 * The two consumers of the race's RabbitMQ pipelines, each writing one dedupe (inbox) row and one
 * effect row per message in one transaction per batch, and reporting its effects' commits to an
 * {@link E2eTimes}: our {@code EFFECTIVELY_ONCE} consumer in batches ({@link RabbitBest}, as the
 * {@code rabbitmq} group runs it) and Spring AMQP's batch listener ({@link RabbitBest#springBatch})
 * with the same dedupe and effect as Spring Kafka's in the Kafka peer ({@link
 * E2eConsumers#applyBatch}).
 */
final class E2eRabbitConsumers {

  /**
   * How long Spring's consumer waits for one more message of a batch before it hands over what it
   * has: the batch closes at the first lull, as ours (which waits for none) does.
   */
  static final long SPRING_RECEIVE_TIMEOUT_MS = 1;

  /** The longest Spring's consumer gathers one batch. */
  static final long SPRING_BATCH_RECEIVE_TIMEOUT_MS = 10;

  /** How our consumer is configured (for the notes). */
  static final String OURS_HOW =
      "our EFFECTIVELY_ONCE consumer (RabbitSubscriber, batches of up to "
          + RabbitBest.BATCH
          + " of what each shard queue has delivered, none waited for; key order, concurrency "
          + RabbitBest.CONCURRENCY
          + ", prefetch "
          + RabbitBest.PREFETCH
          + "): inbox records + effect INSERTs in one transaction per batch, acks after it."
          + " Receipt: the RabbitMQ client reading the delivery off the connection (a"
          + " TrafficListener set through the subscriber's connectionFactory customizer)";

  /** How Spring's container is configured (for the notes). */
  static final String SPRING_HOW =
      "Spring AMQP's SimpleMessageListenerContainer, one per shard queue with one consumer"
          + " (per-key order kept, as a shard queue's order is; competing consumers on a queue"
          + " would not keep it), prefetch "
          + RabbitBest.PREFETCH
          + ", consumerBatchEnabled batch listener (batchSize "
          + RabbitBest.BATCH
          + ", receiveTimeout "
          + SPRING_RECEIVE_TIMEOUT_MS
          + " ms, batchReceiveTimeout "
          + SPRING_BATCH_RECEIVE_TIMEOUT_MS
          + " ms, for latency: the default receiveTimeout of 1 s would hold a partial batch):"
          + " per batch one JDBC transaction with the dedupe INSERTs (ON CONFLICT DO NOTHING on"
          + " the message id) and the new ones' effect INSERTs, each a JDBC batch; acks after it"
          + " (AUTO). Receipt: the container taking the message (its after-receive post-processor)";

  private E2eRabbitConsumers() {}

  /** Our batch consumer of {@code subscription} on {@code topic}, started. */
  static AutoCloseable ours(String uri, Db db, String subscription, String topic, E2eTimes times) {
    RabbitSubscriber sub =
        RabbitSubscriber.builder(uri, RabbitBest.eoSubscription(subscription, topic, true))
            .shards(RabbitBest.SHARDS)
            .prefetch(RabbitBest.PREFETCH)
            .inbox(new E2eConsumers.Recording(PostgresInboxStore.create(db.dataSource()), times))
            .batchHandler(RabbitBest.effects("e2e-rabbit-eob"))
            .connectionFactory(f -> f.setTrafficListener(new DeliveryReceipts(times)))
            .build();
    try {
      sub.start();
    } catch (RuntimeException e) {
      sub.close();
      throw e;
    }
    return sub;
  }

  /** Spring's batch listener on the shard queues of {@code subscription}, started. */
  static AutoCloseable spring(
      String uri, Db db, String subscription, String topic, E2eTimes times) {
    E2eConsumers.dedupeTable(db);
    CachingConnectionFactory cf = new CachingConnectionFactory(URI.create(uri));
    List<SimpleMessageListenerContainer> containers = new ArrayList<>();
    AutoCloseable stop =
        () -> {
          containers.forEach(SimpleMessageListenerContainer::stop);
          cf.destroy();
        };
    try {
      for (int i = 0; i < RabbitBest.SHARDS; i++) {
        SimpleMessageListenerContainer c =
            RabbitBest.springBatch(cf, RabbitTopology.queue(subscription, topic, i));
        c.setReceiveTimeout(SPRING_RECEIVE_TIMEOUT_MS);
        c.setBatchReceiveTimeout(SPRING_BATCH_RECEIVE_TIMEOUT_MS);
        c.setAfterReceivePostProcessors(m -> {
          times.received(id(m), E2eTimes.nowMicros());
          return m;
        });
        c.setMessageListener(
            (BatchMessageListener) messages -> apply(db, subscription, messages, times));
        containers.add(c);
        c.start();
      }
    } catch (RuntimeException e) {
      containers.forEach(SimpleMessageListenerContainer::stop);
      cf.destroy();
      throw e;
    }
    return stop;
  }

  private static void apply(Db db, String group, List<Message> messages, E2eTimes times) {
    UUID[] ids = new UUID[messages.size()];
    String[] keys = new String[ids.length];
    for (int i = 0; i < ids.length; i++) {
      Message m = messages.get(i);
      ids[i] = id(m);
      Object key = m.getMessageProperties().getHeaders().get(RabbitMessages.CE_PARTITIONKEY);
      keys[i] = key == null ? null : key.toString();
    }
    E2eConsumers.applyBatch(db, group, "e2e-rabbit-spring", ids, keys, times);
  }

  private static UUID id(Message m) {
    return UUID.fromString(m.getMessageProperties().getMessageId());
  }
}
