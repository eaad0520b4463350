package dev.postbox.rabbitmq;

import com.rabbitmq.client.Channel;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The RabbitMQ topology Postbox uses, declared idempotently: per topic one durable <b>fanout
 * exchange</b> (named as the topic), which the relay publishes to; per subscription and topic one
 * durable <b>consistent-hash exchange</b> ({@code <subscription>.<topic>}; the {@code
 * rabbitmq_consistent_hash_exchange} plugin ships with the server) bound to the topic's exchange,
 * and {@code shards} durable <b>quorum queues</b> with <b>single active consumer</b> ({@code
 * <subscription>.<topic>.<i>}), each bound to it with weight 1. (A consistent-hash exchange routes
 * a message to exactly one of all the queues bound to it, so each subscription needs its own: with
 * the topic's exchange itself hashing, two subscriptions would split the messages between them.)
 *
 * <p>Why: the exchange hashes the routing key (the message's ordering key) onto one shard, so all
 * messages of a key land in one queue, in publish order; single active consumer lets any number of
 * instances subscribe to every shard while one instance at a time consumes each, so a key is
 * handled by one instance at a time, in order (plain competing consumers on one queue would lose
 * that order). Single active consumer does not balance: the first instance to subscribe to a shard
 * is active on it, the others are standbys that take over at once when it goes. Within an instance
 * the consumer engine runs different keys of a shard concurrently. The price: a shard's throughput
 * is bounded by one consumer, and the shard count of a subscription is fixed once messages flow
 * (changing it rehashes keys onto other queues).
 *
 * <p>A declaration that conflicts with what exists (another exchange type, a classic queue where a
 * quorum queue is expected, other arguments) fails with a {@link RabbitTopologyException} naming
 * it; the channel is then closed by the broker. Stateless.
 */
public final class RabbitTopology {

  /** Default number of shard queues per subscription and topic. */
  public static final int DEFAULT_SHARDS = 4;

  /** The exchange type of the subscriptions' exchanges, which hash a key onto a shard queue. */
  public static final String EXCHANGE_TYPE = "x-consistent-hash";

  /** The exchange type of the topic exchanges (every subscription gets every message). */
  public static final String TOPIC_EXCHANGE_TYPE = "fanout";

  private RabbitTopology() {}

  /** The exchange of {@code topic}: the topic's name. */
  public static String exchange(String topic) {
    return topic;
  }

  /** The consistent-hash exchange of {@code subscription} on {@code topic}. */
  public static String subscriptionExchange(String subscription, String topic) {
    return subscription + "." + topic;
  }

  /** The name of shard queue {@code shard} of {@code subscription} on {@code topic}. */
  public static String queue(String subscription, String topic, int shard) {
    return subscription + "." + topic + "." + shard;
  }

  /** Declares the durable fanout exchange of {@code topic}. */
  public static void declareExchange(Channel channel, String topic) {
    Objects.requireNonNull(topic, "topic");
    declare(channel, exchange(topic), TOPIC_EXCHANGE_TYPE);
  }

  private static void declare(Channel channel, String name, String type) {
    try {
      channel.exchangeDeclare(name, type, true, false, Map.of());
    } catch (IOException | RuntimeException e) {
      throw new RabbitTopologyException(
          "cannot declare exchange '"
              + name
              + "' of type "
              + type
              + " (is the rabbitmq_consistent_hash_exchange plugin enabled, and does no exchange of"
              + " another type exist under that name?)",
          e);
    }
  }

  /**
   * Declares the durable quorum queue {@code queue} with single active consumer and binds it with
   * weight 1 to the (existing) consistent-hash exchange {@code exchange}.
   */
  public static void declareShard(Channel channel, String queue, String exchange) {
    try {
      channel.queueDeclare(
          queue,
          true,
          false,
          false,
          Map.of("x-queue-type", "quorum", "x-single-active-consumer", true));
      channel.queueBind(queue, exchange, "1");
    } catch (IOException | RuntimeException e) {
      throw new RabbitTopologyException(
          "cannot declare queue '"
              + queue
              + "' (durable quorum queue with single active consumer) bound to exchange '"
              + exchange
              + "': does a queue with other arguments exist under that name?",
          e);
    }
  }

  /**
   * Declares the exchange of {@code topic}, the consistent-hash exchange of {@code subscription}
   * bound to it and the {@code shards} quorum queues bound to that; returns the queue names, shard
   * 0 first.
   */
  public static List<String> declareShards(
      Channel channel, String subscription, String topic, int shards) {
    if (shards < 1) {
      throw new IllegalArgumentException("shards must be at least 1, was " + shards);
    }
    declareExchange(channel, topic);
    String hash = subscriptionExchange(subscription, topic);
    declare(channel, hash, EXCHANGE_TYPE);
    try {
      channel.exchangeBind(hash, exchange(topic), "");
    } catch (IOException | RuntimeException e) {
      throw new RabbitTopologyException(
          "cannot bind exchange '" + hash + "' to exchange '" + exchange(topic) + "'", e);
    }
    List<String> queues = new ArrayList<>(shards);
    for (int i = 0; i < shards; i++) {
      String q = queue(subscription, topic, i);
      declareShard(channel, q, hash);
      queues.add(q);
    }
    return List.copyOf(queues);
  }
}
