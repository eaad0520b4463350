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
      throw refusedOrTransient(
          e,
          "cannot declare exchange '"
              + name
              + "' of type "
              + type
              + " (is the rabbitmq_consistent_hash_exchange plugin enabled, and does no exchange of"
              + " another type exist under that name?)");
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
      throw refusedOrTransient(
          e,
          "cannot declare queue '"
              + queue
              + "' (durable quorum queue with single active consumer) bound to exchange '"
              + exchange
              + "': does a queue with other arguments exist under that name?");
    }
  }

  /**
   * The broker's reply codes that refuse a declaration for good: 403 access refused, 404 not found,
   * 405 resource locked, 406 precondition failed (other arguments or type), 503 command invalid (an
   * unknown exchange type), 530 not allowed. Anything else (541 internal error, 320 connection
   * forced, a lost connection, an I/O error, a timeout) is transient: a quorum queue without a
   * leader yet, a broker restarting.
   */
  static final java.util.Set<Integer> REFUSALS = java.util.Set.of(403, 404, 405, 406, 503, 530);

  /**
   * A {@link RabbitTopologyException} (with {@code message}) when the broker refused the
   * declaration, else {@code e} itself (or, if checked, wrapped in an {@link
   * java.io.UncheckedIOException}): a transient failure the caller retries.
   */
  static RuntimeException refusedOrTransient(Exception e, String message) {
    Integer code = replyCode(e);
    if (code != null && REFUSALS.contains(code)) {
      return new RabbitTopologyException(message, e);
    }
    if (e instanceof RuntimeException r) {
      return r;
    }
    return new java.io.UncheckedIOException(
        message + " (transient: " + e + ")", e instanceof IOException io ? io : new IOException(e));
  }

  /** The reply code of the channel or connection close in {@code e}'s causes, or null. */
  static Integer replyCode(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof com.rabbitmq.client.ShutdownSignalException s) {
        if (s.getReason() instanceof com.rabbitmq.client.AMQP.Channel.Close c) {
          return c.getReplyCode();
        }
        if (s.getReason() instanceof com.rabbitmq.client.AMQP.Connection.Close c) {
          return c.getReplyCode();
        }
        return null;
      }
    }
    return null;
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
      throw refusedOrTransient(
          e, "cannot bind exchange '" + hash + "' to exchange '" + exchange(topic) + "'");
    }
    List<String> queues = new ArrayList<>(shards);
    for (int i = 0; i < shards; i++) {
      String q = queue(subscription, topic, i);
      declareShard(channel, q, hash);
      queues.add(q);
    }
    return List.copyOf(queues);
  }

  /**
   * Declares the wait queues of {@code queue} for delayed retries: for each tier {@code i} (from 1)
   * a durable quorum queue {@code <queue>.wait.<i>} whose messages expire after the tier's delay
   * ({@code x-message-ttl}) and are then dead-lettered, at least once, back to {@code queue}
   * through the default exchange ({@code x-dead-letter-exchange ""}, {@code
   * x-dead-letter-routing-key <queue>}, {@code x-dead-letter-strategy at-least-once}, which needs
   * {@code x-overflow reject-publish}). Nobody consumes a wait queue: a message leaves it only by
   * expiring, in order, since every message of one queue has the same time to live.
   */
  public static void declareWaitQueues(
      Channel channel, String queue, java.util.List<java.time.Duration> tiers) {
    for (int i = 1; i <= tiers.size(); i++) {
      String wait = waitQueue(queue, i);
      Map<String, Object> args = new java.util.LinkedHashMap<>();
      args.put("x-queue-type", "quorum");
      args.put("x-message-ttl", tiers.get(i - 1).toMillis());
      args.put("x-dead-letter-exchange", "");
      args.put("x-dead-letter-routing-key", queue);
      args.put("x-dead-letter-strategy", "at-least-once");
      args.put("x-overflow", "reject-publish");
      try {
        channel.queueDeclare(wait, true, false, false, args);
      } catch (IOException | RuntimeException e) {
        throw refusedOrTransient(
            e,
            "cannot declare wait queue '"
                + wait
                + "' (quorum queue, "
                + tiers.get(i - 1).toMillis()
                + " ms message TTL, dead-lettering to '"
                + queue
                + "'): does a queue with other arguments (another delay) exist under that name?");
      }
    }
  }

  /** The wait queue of retry tier {@code tier} (from 1) of {@code queue}. */
  public static String waitQueue(String queue, int tier) {
    return queue + ".wait." + tier;
  }

  /**
   * Checks that the exchange {@code name} exists (the broker's dead-letter exchange of a
   * subscriber), on a channel of its own since a missing exchange closes it.
   *
   * @throws RabbitTopologyException if it does not exist
   */
  public static void checkExchangeExists(com.rabbitmq.client.Connection connection, String name)
      throws IOException {
    Channel ch = connection.createChannel();
    try {
      ch.exchangeDeclarePassive(name);
    } catch (IOException | RuntimeException e) {
      throw refusedOrTransient(
          e,
          "the dead-letter exchange '"
              + name
              + "' does not exist: declare it (and bind a queue to it) before starting");
    } finally {
      if (ch.isOpen()) {
        try {
          ch.close();
        } catch (java.util.concurrent.TimeoutException | IOException ignored) {
          // the check is done
        }
      }
    }
  }
}
