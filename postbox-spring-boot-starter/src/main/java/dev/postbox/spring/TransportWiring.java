package dev.postbox.spring;

import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.ShardLeaseStore;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the starter needs from a transport ({@code postbox.transport}): the relay's publisher, the
 * consumers, the direct at-most-once sender and the consumers' lag. One implementation per adapter
 * ({@link KafkaWiring}, {@link RabbitWiring}), each the only starter class that names its adapter's
 * types, so an application without the other adapter on its class path never loads them.
 */
interface TransportWiring extends AutoCloseable {

  /**
   * The PostgreSQL stores a consumer gets from the delivery table (shard leases: with {@code
   * postbox.rabbitmq.shard-leases}; the age store: with {@code postbox.rabbitmq.age-reports}).
   */
  record Stores(
      Optional<InboxStore> inbox,
      Optional<IdempotencyStore> idempotency,
      Optional<DeadLetterStore> deadLetters,
      Optional<ParkingStore> parking,
      Optional<ShardLeaseStore> shardLeases,
      Optional<ConsumerAgeStore> ageStore) {}

  /** A new publisher for the relay. */
  RelayPublisher relayPublisher();

  /**
   * A consumer, built and not yet started; {@code newAtEnd}: if its group is new (nothing
   * committed), it starts at the end of its topics (Kafka), not at their beginning.
   */
  Consumer consumer(
      PostboxConsumer consumer,
      boolean newAtEnd,
      Stores stores,
      PostboxMetrics metrics,
      Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry);

  /** A new direct (at-most-once, no outbox) sender. */
  PostboxPublisher.DirectSender directSender();

  /**
   * The lag details of each running consumer, by subscription name (absent when unknown): as age
   * and records on Kafka, as messages queued on RabbitMQ.
   */
  Map<String, Map<String, Object>> lag(List<Subscription> subscriptions);

  /** Releases what {@link #lag} holds. */
  @Override
  void close();

  /** A transport's consumer of one subscription. */
  interface Consumer {
    /**
     * Starts consuming; a problem of the delivery table that only the broker can reveal (Kafka: the
     * topic's retention outlives the dedupe records) is returned, not thrown, so that all of them
     * are reported together (the consumer is then not running).
     */
    Optional<String> start();

    /** Health and details while it runs. */
    ConsumerHealth health();

    /** Stops gracefully (running deliveries finish). */
    void close();
  }
}
