package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.List;

/**
 * The RabbitMQ side of the race's RabbitMQ pipelines ({@link E2eRabbitPollingPipeline}, {@link
 * E2eRabbitSpringPipeline}): a node for one run ({@link RabbitNode}: started for the run and
 * stopped after it, so that it idles through no other pipeline's CPU figures), a topic with the
 * subscription's {@value RabbitBest#SHARDS} shard queues (quorum queues, single active consumer),
 * and Postbox's polling relay publishing to it with confirms, reporting them ({@link
 * RelayConfirmTimes}). One run at a time.
 */
final class E2eRabbit {

  /** How the relay is configured, for the notes. */
  static final String RELAY_HOW =
      "polling relay, defaults (the writers' NOTIFY wakes it, a poll every second otherwise,"
          + " idle grace) with RabbitRelayPublisher (persistent, mandatory, publisher confirms,"
          + " the next batch published while the previous one waits for its confirms) -> "
          + RabbitBest.SHARDS
          + " quorum queues (single active consumer)";

  /** What the hops are on RabbitMQ. */
  static final List<String> HOPS =
      List.of(
          "commit to the relay having the broker's publisher confirm (per relay batch: when its"
              + " wait for the batch's confirms returned; at most the receipt, or the effect's"
              + " commit where the receipt is not measured)",
          "the relay's confirm to the consumer receiving the message (a quorum queue delivers and"
              + " confirms a message once a majority has it; a confirm the relay read after the"
              + " receipt counts at the receipt, and this hop reads 0)",
          "the consumer's receipt to the effect's transaction committed");

  private static final Duration READY = Duration.ofSeconds(60);

  private final String subscription;
  private RabbitMqServer server;
  private RabbitWork work;

  /** For the pipeline {@code key}: its subscription's name. */
  E2eRabbit(String key) {
    this.subscription = "bench-e2e-" + key.replace('_', '-');
  }

  /** The subscription whose shard queues the consumer reads. */
  String subscription() {
    return subscription;
  }

  /** The node's AMQP URI (after {@link #broker()}). */
  String uri() {
    return work.uri();
  }

  /** Starts the node (or takes the external broker); closing stops a node it started. */
  AutoCloseable broker() {
    server = RabbitNode.start();
    work = new RabbitWork(server.uri());
    return () -> {
      RabbitMqServer s = server;
      server = null;
      work = null;
      RabbitNode.release(s);
    };
  }

  /** A new topic with the subscription's shard queues, bound before the relay publishes. */
  String topic() throws Exception {
    return work.topic(
        "e2e", subscription, RabbitBest.SHARDS, RabbitTopology.Consumers.SINGLE_ACTIVE);
  }

  /** Postbox's polling relay on {@code db}'s outbox, its defaults, confirms reported. */
  Relay relay(Db db, E2eTimes times) {
    return Relay.builder(
            PostgresRelayStore.create(db.dataSource()),
            new RelayConfirmTimes(RabbitRelayPublisher.builder(uri()).build(), times))
        .instanceId("bench-" + db.schema())
        .build();
  }

  /** Waits until every shard queue of {@code topic} has a consumer. */
  void awaitConsumers(String topic) throws InterruptedException {
    BenchEnv.awaitCount(
        "consumers on " + topic,
        () -> {
          try {
            return java.util.Arrays.stream(work.consumers(subscription, topic, RabbitBest.SHARDS))
                .filter(c -> c > 0)
                .count();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        },
        RabbitBest.SHARDS,
        READY);
  }

  /**
   * Starts the relay, then the consumer {@code consumer} opens, and waits until it consumes every
   * shard queue; closing stops the consumer, then the relay, and deletes the queues.
   */
  AutoCloseable start(Relay relay, String topic, Opener consumer) throws Exception {
    AutoCloseable c;
    try {
      relay.start();
      c = consumer.open();
      try {
        awaitConsumers(topic);
      } catch (RuntimeException | InterruptedException e) {
        c.close();
        throw e;
      }
    } catch (Exception e) {
      relay.close();
      work.delete(subscription, topic, RabbitBest.SHARDS);
      throw e;
    }
    return () -> {
      try (relay) {
        c.close();
      }
      work.delete(subscription, topic, RabbitBest.SHARDS);
    };
  }

  /** Opens a consumer. */
  @FunctionalInterface
  interface Opener {
    AutoCloseable open() throws Exception;
  }
}
