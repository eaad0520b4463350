package dev.postbox.spec;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

/**
 * What {@link TransportSpec} needs from a transport, and nothing transport-specific: topics, a
 * subscriber with a given subscription and handler, the relay of the outbox, a publish that
 * bypasses the outbox (to deliver one id twice), a tap that reads what the broker holds, and the
 * decoder that turns a dead letter back into its message. One instance per test, on that test's
 * schema; {@link #close()} stops everything it started. Implementations: {@link KafkaTransport},
 * {@link RabbitTransport}.
 */
interface Transport extends AutoCloseable {

  /** {@code kafka} or {@code rabbitmq}. */
  String name();

  /**
   * A new topic for this test. Subscribers started on it before anything is published see
   * everything published (RabbitMQ declares a subscription's queues at its start).
   */
  String topic(String base);

  /**
   * Starts a subscriber of {@code subscription} running {@code handler}: with the test schema's
   * PostgreSQL inbox for {@code EFFECTIVELY_ONCE}, the test kit's Redis as the idempotency store
   * for {@code DEDUPLICATED}, and the schema's dead-letter store always.
   */
  Subscriber subscribe(Subscription subscription, MessageHandler handler);

  /** Starts a relay on the test schema's outbox that publishes to this transport. */
  Relay relay();

  /**
   * Publishes {@code messages} as they are, without the outbox (the same message twice gives the
   * same id twice, as a relay that crashed before marking its rows would), and waits for the
   * broker's acknowledgement of each.
   */
  void publishDirectly(List<Message> messages) throws Exception;

  /**
   * Starts reading the raw records of {@code topic} as the broker holds them (on RabbitMQ a queue
   * of its own bound to the topic's exchange, so start it before publishing).
   */
  Tap tap(String topic);

  /** Turns a dead letter written by this transport's subscriber back into its message (replay). */
  Function<DeadLetter, Message> deadLetterDecoder();

  /** The test schema's dead-letter store, which every subscriber of this transport writes to. */
  DeadLetterStore deadLetters();

  /** Stops every subscriber, relay and tap it started. */
  @Override
  void close();

  /** A running subscriber. */
  interface Subscriber {
    ConsumerStats stats();

    int inFlight();
  }

  /** Raw records of a topic as the broker delivers them. */
  interface Tap extends AutoCloseable {

    /**
     * The record carrying message {@code id}, as a dead letter would keep it (key, value, headers
     * in the transport's dead-letter form).
     *
     * @throws AssertionError if it did not arrive within {@code timeout}
     */
    RawRecord await(UUID id, Duration timeout) throws Exception;

    @Override
    void close();
  }

  /** A record's bytes: key, value and headers, in order. */
  record RawRecord(byte[] key, byte[] value, List<DeadLetterStore.Header> headers) {}
}
