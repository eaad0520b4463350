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
 * durable <b>direct exchange</b> ({@code <subscription>.<topic>}) bound to the topic's exchange,
 * and {@code shards} durable <b>quorum queues</b> ({@code <subscription>.<topic>.<i>}), with
 * <b>single active consumer</b> for a key-ordered subscription and without it (competing consumers,
 * {@link Consumers#COMPETING}) for an {@code UNORDERED} one. The routing key of a message is its
 * <b>slot</b> ({@link #routingKey(String)}: the CRC-32 of the ordering key's UTF-8 bytes modulo
 * {@value #SLOTS}, as a decimal string), and slot {@code s} is bound to shard queue {@code s %
 * shards}; each subscription has its own exchange so that every subscription gets every message,
 * whatever its shard count. A message whose routing key is not a slot (published by hand or by an
 * older relay) goes, through the exchange's alternate exchange ({@code
 * <subscription>.<topic>.unsharded}, a fanout), to shard 0, never nowhere.
 *
 * <p>Why: all messages of a key land in one queue, in publish order; single active consumer lets
 * any number of instances subscribe to every shard while one instance at a time consumes each, so a
 * key is handled by one instance at a time, in order (plain competing consumers on one queue would
 * lose that order). Single active consumer does not balance: the first instance to subscribe to a
 * shard is active on it, the others are standbys that take over at once when it goes. Within an
 * instance the consumer engine runs different keys of a shard concurrently. The price: a shard's
 * throughput is bounded by one consumer, and the shard count of a subscription is fixed (a start
 * with another count than its queues have is refused).
 *
 * <p>Why not the {@code x-consistent-hash} exchange (used before): its hash ring lives in the
 * node's memory and is rebuilt from the bindings when the node starts, in the order its recovery
 * workers happen to add them (RabbitMQ 3.10: {@code rabbit_binding:recover/2} adds each binding
 * from a worker pool), so after a restart most keys routed to <em>another</em> shard queue while
 * their older messages still waited in the old one, and two shard consumers applied one key's
 * messages at the same time. A direct exchange routes on the slot alone: the same queue before and
 * after any restart ({@code RabbitShardRoutingIT}). An exchange {@code <subscription>.<topic>} of
 * that older type fails the start with a {@link RabbitTopologyException} saying so. Upgrading: stop
 * the older relays, let the subscription's shard queues drain, delete its exchange, then start the
 * new subscribers and relays (an older relay's message, its key as routing key, would go to shard
 * 0, possibly beside newer messages of its key in another shard).
 *
 * <p>A declaration that conflicts with what exists (another exchange type, a classic queue where a
 * quorum queue is expected, other arguments) fails with a {@link RabbitTopologyException} naming
 * it; the channel is then closed by the broker. Stateless.
 */
public final class RabbitTopology {

  /** Default number of shard queues per subscription and topic. */
  public static final int DEFAULT_SHARDS = 4;

  /**
   * The number of routing slots a key hashes to, and the most shard queues a subscription can have.
   */
  public static final int SLOTS = 256;

  /** The exchange type of the subscriptions' exchanges, which route a slot to its shard queue. */
  public static final String EXCHANGE_TYPE = "direct";

  /** The exchange type of the topic exchanges (every subscription gets every message). */
  public static final String TOPIC_EXCHANGE_TYPE = "fanout";

  /** The exchange type Postbox's subscriptions had before, refused by name now. */
  static final String OLD_EXCHANGE_TYPE = "x-consistent-hash";

  private RabbitTopology() {}

  /** The exchange of {@code topic}: the topic's name. */
  public static String exchange(String topic) {
    return topic;
  }

  /** The direct exchange of {@code subscription} on {@code topic}. */
  public static String subscriptionExchange(String subscription, String topic) {
    return subscription + "." + topic;
  }

  /**
   * The alternate exchange of {@code subscription}'s direct exchange on {@code topic} with {@code
   * shards} shard queues ({@code <subscription>.<topic>.unsharded-of-<shards>}, a fanout bound to
   * shard 0): what the direct exchange cannot route (a routing key that is not a slot) goes there.
   * Its name carries the shard count, and the broker refuses to declare an exchange again with
   * another {@code alternate-exchange}, so a start with another shard count fails instead of
   * binding the slots twice.
   */
  public static String unshardedExchange(String subscription, String topic, int shards) {
    return subscription + "." + topic + ".unsharded-of-" + shards;
  }

  /** The name of shard queue {@code shard} of {@code subscription} on {@code topic}. */
  public static String queue(String subscription, String topic, int shard) {
    return subscription + "." + topic + "." + shard;
  }

  /**
   * The slot of ordering key {@code key}: the CRC-32 (IEEE) of its UTF-8 bytes modulo {@value
   * #SLOTS}. A pure function of the key, so any publisher in any language can compute it.
   */
  public static int slot(String key) {
    java.util.zip.CRC32 crc = new java.util.zip.CRC32();
    crc.update(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return (int) (crc.getValue() % SLOTS);
  }

  /** The routing key of a message with ordering key {@code key}: its {@link #slot}, in decimal. */
  public static String routingKey(String key) {
    return Integer.toString(slot(key));
  }

  /** The shard (of {@code shards}) that slot {@code slot} is bound to. */
  public static int shardOf(int slot, int shards) {
    return slot % shards;
  }

  /** Declares the durable fanout exchange of {@code topic}. */
  public static void declareExchange(Channel channel, String topic) {
    Objects.requireNonNull(topic, "topic");
    declare(channel, exchange(topic), TOPIC_EXCHANGE_TYPE, Map.of());
  }

  private static void declare(
      Channel channel, String name, String type, Map<String, Object> arguments) {
    try {
      channel.exchangeDeclare(name, type, true, false, arguments);
    } catch (IOException | RuntimeException e) {
      throw refusedOrTransient(e, refusal(name, type, arguments, e));
    }
  }

  private static String refusal(
      String name, String type, Map<String, Object> arguments, Exception e) {
    String reply = String.valueOf(replyText(e));
    if (reply.contains(OLD_EXCHANGE_TYPE)) {
      return "exchange '"
          + name
          + "' is an "
          + OLD_EXCHANGE_TYPE
          + " exchange of an older Postbox, whose routing moved keys to other shard queues when"
          + " the node restarted (see RabbitTopology): let its shard queues drain, delete the"
          + " exchange and start again ("
          + reply
          + ")";
    }
    if (reply.contains("alternate-exchange")) {
      return "exchange '"
          + name
          + "' exists for another shard count (its alternate exchange is not "
          + arguments.get("alternate-exchange")
          + "): the shard count of a subscription is fixed ("
          + reply
          + ")";
    }
    return "cannot declare exchange '"
        + name
        + "' of type "
        + type
        + " with arguments "
        + arguments
        + " (does an exchange of another type exist under that name?)";
  }

  /**
   * How the instances of a subscription consume a shard queue, fixed when the queue is declared
   * ({@code x-single-active-consumer} is a queue argument, which the broker cannot change in
   * place).
   */
  public enum Consumers {
    /**
     * Single active consumer: one consumer at a time gets the queue's messages, the others stand
     * by. Key-ordered subscriptions ({@code KEY}, {@code PARTITION}): a key is handled by one
     * instance at a time, in order.
     */
    SINGLE_ACTIVE,
    /**
     * Competing consumers: every consumer of the queue gets messages, as far as its prefetch
     * allows. {@code UNORDERED} subscriptions: any number of instances share the work.
     */
    COMPETING;

    /** How a subscription with {@code ordering} consumes its shard queues. */
    public static Consumers of(dev.postbox.core.consumer.Ordering ordering) {
      return ordering == dev.postbox.core.consumer.Ordering.UNORDERED ? COMPETING : SINGLE_ACTIVE;
    }
  }

  /**
   * Declares the durable quorum queue of shard {@code shard} (of {@code shards}) of {@code
   * subscription} on {@code topic}, with single active consumer; see {@link #declareShard(Channel,
   * String, String, int, int, Consumers)}.
   */
  public static String declareShard(
      Channel channel, String subscription, String topic, int shard, int shards) {
    return declareShard(channel, subscription, topic, shard, shards, Consumers.SINGLE_ACTIVE);
  }

  /**
   * Declares the durable quorum queue of shard {@code shard} (of {@code shards}) of {@code
   * subscription} on {@code topic}, with single active consumer or for competing consumers as
   * {@code consumers} says, and binds it to the subscription's (existing) direct exchange with the
   * routing key of every slot {@code s} with {@code s % shards == shard}; shard 0 also to the
   * (existing) alternate exchange. Returns the queue's name.
   *
   * @throws RabbitTopologyException if the queue exists with other arguments; for a queue declared
   *     with the other {@link Consumers} mode the message names the queue and how to migrate it
   */
  public static String declareShard(
      Channel channel,
      String subscription,
      String topic,
      int shard,
      int shards,
      Consumers consumers) {
    checkShards(shards);
    Objects.requireNonNull(consumers, "consumers");
    if (shard < 0 || shard >= shards) {
      throw new IllegalArgumentException("shard must be in [0, " + shards + "), was " + shard);
    }
    String queue = queue(subscription, topic, shard);
    String exchange = subscriptionExchange(subscription, topic);
    try {
      channel.queueDeclare(
          queue,
          true,
          false,
          false,
          consumers == Consumers.SINGLE_ACTIVE
              ? Map.of("x-queue-type", "quorum", "x-single-active-consumer", true)
              : Map.of("x-queue-type", "quorum"));
      for (int slot = shard; slot < SLOTS; slot += shards) {
        channel.queueBind(queue, exchange, Integer.toString(slot));
      }
      if (shard == 0) {
        channel.queueBind(queue, unshardedExchange(subscription, topic, shards), "");
      }
      return queue;
    } catch (IOException | RuntimeException e) {
      throw refusedOrTransient(e, queueRefusal(queue, exchange, consumers, e));
    }
  }

  private static String queueRefusal(
      String queue, String exchange, Consumers consumers, Exception e) {
    String reply = String.valueOf(replyText(e));
    if (reply.contains("x-single-active-consumer")) {
      return consumers == Consumers.COMPETING
          ? "queue '"
              + queue
              + "' exists with other arguments: with single active consumer (declared by a"
              + " key-ordered subscription,"
              + " or by an UNORDERED one before UNORDERED subscriptions consumed with competing"
              + " consumers), and a queue's arguments cannot change in place. To migrate: stop the"
              + " relays publishing to its topic and every instance of the subscription, let the"
              + " queue drain (consume it with the earlier version or the ordered subscription"
              + " until it is empty), delete it (rabbitmqctl delete_queue "
              + queue
              + "), start the subscription (it declares the queue anew), then the relays. Or keep"
              + " the subscription key-ordered ("
              + reply
              + ")"
          : "queue '"
              + queue
              + "' exists with other arguments: without single active consumer (declared by an"
              + " UNORDERED subscription for competing consumers, or not by Postbox), and a"
              + " key-ordered subscription needs it: a queue's"
              + " arguments cannot change in place. To migrate: stop the relays publishing to its"
              + " topic and every instance of the subscription, let the queue drain, delete it"
              + " (rabbitmqctl delete_queue "
              + queue
              + "), start the subscription, then the relays ("
              + reply
              + ")";
    }
    return "cannot declare queue '"
        + queue
        + "' (durable quorum queue"
        + (consumers == Consumers.SINGLE_ACTIVE ? " with single active consumer" : "")
        + ") bound to exchange '"
        + exchange
        + "': does a queue with other arguments exist under that name?";
  }

  private static void checkShards(int shards) {
    if (shards < 1 || shards > SLOTS) {
      throw new IllegalArgumentException(
          "shards must be between 1 and " + SLOTS + " (the slots), was " + shards);
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

  /** The reply text of the channel or connection close in {@code e}'s causes, or null. */
  static String replyText(Throwable e) {
    return switch (closeReason(e)) {
      case com.rabbitmq.client.AMQP.Channel.Close c -> c.getReplyText();
      case com.rabbitmq.client.AMQP.Connection.Close c -> c.getReplyText();
      case null, default -> null;
    };
  }

  /** The reply code of the channel or connection close in {@code e}'s causes, or null. */
  static Integer replyCode(Throwable e) {
    return switch (closeReason(e)) {
      case com.rabbitmq.client.AMQP.Channel.Close c -> c.getReplyCode();
      case com.rabbitmq.client.AMQP.Connection.Close c -> c.getReplyCode();
      case null, default -> null;
    };
  }

  /** The reason of the first shutdown signal in {@code e}'s causes, or null. */
  private static com.rabbitmq.client.Method closeReason(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof com.rabbitmq.client.ShutdownSignalException s) {
        return s.getReason();
      }
    }
    return null;
  }

  /**
   * Declares the exchange of {@code topic}, the direct exchange of {@code subscription} and its
   * {@code shards} quorum queues with single active consumer; see {@link #declareShards(Channel,
   * String, String, int, Consumers)}.
   */
  public static List<String> declareShards(
      Channel channel, String subscription, String topic, int shards) {
    return declareShards(channel, subscription, topic, shards, Consumers.SINGLE_ACTIVE);
  }

  /**
   * Declares the exchange of {@code topic}, the direct exchange of {@code subscription} (with its
   * alternate exchange) and the {@code shards} quorum queues bound to them (consumed as {@code
   * consumers} says), and last binds the direct exchange to the topic's (so no message reaches it
   * before every slot has its queue); returns the queue names, shard 0 first.
   */
  public static List<String> declareShards(
      Channel channel, String subscription, String topic, int shards, Consumers consumers) {
    checkShards(shards);
    declareExchange(channel, topic);
    String unsharded = unshardedExchange(subscription, topic, shards);
    declare(channel, unsharded, TOPIC_EXCHANGE_TYPE, Map.of());
    String direct = subscriptionExchange(subscription, topic);
    declare(channel, direct, EXCHANGE_TYPE, Map.of("alternate-exchange", unsharded));
    List<String> queues = new ArrayList<>(shards);
    for (int i = 0; i < shards; i++) {
      queues.add(declareShard(channel, subscription, topic, i, shards, consumers));
    }
    try {
      channel.exchangeBind(direct, exchange(topic), "");
    } catch (IOException | RuntimeException e) {
      throw refusedOrTransient(
          e, "cannot bind exchange '" + direct + "' to exchange '" + exchange(topic) + "'");
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
