package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.core.reply.LateReplyListener;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * What the shop needs from its message transport, so that {@link ShopDemo} runs the same story on
 * Kafka ({@link KafkaShopTransport}) and RabbitMQ ({@link RabbitShopTransport}): the broker, the
 * topics (or exchanges and queues), the observer's read of the orders topic, how much the inventory
 * has not finished yet, the decoder of dead letters for the replay, and where the keys held back
 * during the warehouse outage are recorded. The relay and inventory child processes pick their
 * adapter from {@link #kind()} ({@link RelayProcess}, {@link InventoryProcess}).
 */
sealed interface ShopTransport permits KafkaShopTransport, RabbitShopTransport {

  /** The transports the demo runs on; {@link #name()} is the report's {@code transport}. */
  enum Kind {
    KAFKA,
    RABBITMQ;

    /** {@code kafka} or {@code rabbitmq}. */
    String id() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** The kind named {@code id} ({@code kafka}, {@code rabbitmq}), case-insensitive. */
    static Kind of(String id) {
      for (Kind k : values()) {
        if (k.id().equalsIgnoreCase(id)) {
          return k;
        }
      }
      throw new IllegalArgumentException("unknown transport '" + id + "' (kafka or rabbitmq)");
    }
  }

  /** Brings up (or finds) the broker of {@code kind}. */
  static ShopTransport start(Kind kind) {
    return switch (kind) {
      case KAFKA -> KafkaShopTransport.start();
      case RABBITMQ -> RabbitShopTransport.start();
    };
  }

  Kind kind();

  /** What the children connect to: Kafka's bootstrap servers, or RabbitMQ's AMQP URI. */
  String address();

  /** The broker, for the start-up line ("Kafka broker process"). */
  String describe();

  /**
   * Creates what the shop publishes to and reads from, before anything is published: the orders and
   * stock topics, and on RabbitMQ also the queues of the inventory ({@code inventoryGroup}) and of
   * the observer, so that no message is unroutable or published before its queue exists.
   */
  void createTopics(String ordersTopic, String stockTopic, String inventoryGroup) throws Exception;

  /**
   * Creates what the payments' request/reply needs ({@link PaymentsPhase}): the request topic
   * (Kafka: with {@code replyTopic}, the orders service's reply topic; RabbitMQ: the payments
   * subscription's ({@code paymentsGroup}) queues, so that no request is unroutable).
   */
  void createPaymentTopics(String requestTopic, String replyTopic, String paymentsGroup)
      throws Exception;

  /**
   * The orders service's requester, started: on Kafka it reads partition 0 of {@code replyTopic};
   * on RabbitMQ an exclusive reply queue of its own. Late replies go to {@code late}.
   */
  Requester requester(String replyTopic, LateReplyListener late);

  /**
   * The consumer-lag gauges of {@code group}'s subscription to {@code topic}, bound to {@code
   * metrics}: on Kafka the group's lag, on RabbitMQ its shard queues' depth, consumers and stall.
   */
  LagGauges lagGauges(dev.postbox.core.metrics.PostboxMetrics metrics, String group, String topic);

  /**
   * Reads every message of {@code topic} from the beginning and hands it to {@code observer} until
   * {@code running} turns false.
   */
  void observe(String topic, ShopObserver observer, AtomicBoolean running);

  /**
   * Messages of {@code topic} the inventory ({@code group}) has not finished yet (Kafka: beyond the
   * group's committed offsets; RabbitMQ: still in its queues); 0 means it read everything.
   */
  long notYetDone(HikariDataSource ds, String group, String topic) throws Exception;

  /** The replay's decoder: dead letter to the original message. */
  Function<DeadLetter, Message> deadLetterDecoder();

  /**
   * The query that lists the keys held back during the warehouse outage: the parked keys, on both
   * transports.
   */
  String heldKeysQuery();
}
