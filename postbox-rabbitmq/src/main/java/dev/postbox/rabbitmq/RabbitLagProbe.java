package dev.postbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeoutException;

/**
 * Measures the backlog of RabbitMQ subscriptions from the broker, per shard queue: the messages
 * ready for delivery and the consumers, from a passive {@code queue.declare} (AMQP; no plugin).
 *
 * <p>What it does not measure, and why: the messages delivered but not yet acked (AMQP reports only
 * the ready ones; the management plugin's HTTP API has them), and the age of the oldest message.
 * RabbitMQ 3.10 has no AMQP method for the head message's age; the management API's {@code
 * head_message_timestamp} is reported for classic queues only (Postbox's shard queues are quorum
 * queues) and needs the plugin; and peeking with {@code basic.get} and requeueing would mark the
 * head redelivered and, with single active consumer, is refused. The reading: ready messages with
 * no consumer is a stalled subscription; none ready is an idle (or keeping-up) one; ready messages
 * that grow between two reads while consumers run is one falling behind.
 *
 * <p>Opens its connection at the first {@link #read()}; a queue that does not exist (the
 * subscription never started) is left out. Not thread-safe.
 */
public final class RabbitLagProbe implements AutoCloseable {

  /**
   * One shard queue of a subscription, as the broker reports it.
   *
   * @param messagesReady messages waiting for delivery (not counting delivered, unacked ones)
   * @param consumers consumers subscribed to the queue (with single active consumer, the broker may
   *     report only the active one)
   */
  public record QueueLag(
      String subscription,
      String topic,
      int shard,
      String queue,
      long messagesReady,
      int consumers) {

    /** Messages wait and nobody consumes them. */
    public boolean stalled() {
      return messagesReady > 0 && consumers == 0;
    }
  }

  private record Watched(String subscription, String topic, int shards) {}

  private final ConnectionFactory factory;
  private final List<Watched> watched;
  private Connection connection;

  private RabbitLagProbe(Builder b) {
    this.factory = b.factory;
    this.watched = List.copyOf(b.watched.values());
  }

  /** A builder for a probe of the broker at {@code uri} ({@code amqp://user:pass@host/vh}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /**
   * Reads every shard queue of the watched subscriptions now, in subscription, topic and shard
   * order.
   *
   * @throws RabbitStartupException if the broker cannot be reached or refuses the credentials
   */
  public List<QueueLag> read() {
    Connection c = connection();
    List<QueueLag> out = new ArrayList<>();
    for (Watched w : watched) {
      for (int shard = 0; shard < w.shards(); shard++) {
        String queue = RabbitTopology.queue(w.subscription(), w.topic(), shard);
        AMQP.Queue.DeclareOk ok = passive(c, queue);
        if (ok != null) {
          out.add(
              new QueueLag(
                  w.subscription(),
                  w.topic(),
                  shard,
                  queue,
                  ok.getMessageCount(),
                  ok.getConsumerCount()));
        }
      }
    }
    return List.copyOf(out);
  }

  /** The queue's counts, or null if it does not exist; on a channel of its own (404 closes it). */
  private static AMQP.Queue.DeclareOk passive(Connection c, String queue) {
    Channel ch = null;
    try {
      ch = c.createChannel();
      return ch.queueDeclarePassive(queue);
    } catch (IOException | RuntimeException e) {
      Integer code = RabbitTopology.replyCode(e);
      if (code != null && code == 404) {
        return null;
      }
      throw new java.io.UncheckedIOException(
          "cannot read queue '" + queue + "': " + e,
          e instanceof IOException io ? io : new IOException(e));
    } finally {
      if (ch != null && ch.isOpen()) {
        try {
          ch.close();
        } catch (IOException | TimeoutException | RuntimeException ignored) {
          // the read is done
        }
      }
    }
  }

  private Connection connection() {
    if (connection == null || !connection.isOpen()) {
      try {
        connection = RabbitConnect.open(factory, List.of(), "postbox-lag-probe");
      } catch (IOException | TimeoutException e) {
        throw RabbitConnect.refused("the lag probe", factory, e);
      }
    }
    return connection;
  }

  /** Closes the connection. Idempotent. */
  @Override
  public void close() {
    Connection c = connection;
    connection = null;
    if (c != null && c.isOpen()) {
      try {
        c.close(5_000);
      } catch (IOException | RuntimeException e) {
        c.abort();
      }
    }
  }

  /** Builds a {@link RabbitLagProbe}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory factory = new ConnectionFactory();
    private final Map<String, Watched> watched = new LinkedHashMap<>();

    private Builder(String uri) {
      Objects.requireNonNull(uri, "uri");
      try {
        factory.setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException("not an AMQP URI: " + uri, e);
      }
      factory.setAutomaticRecoveryEnabled(false);
    }

    /**
     * Watches the {@code shards} shard queues of {@code subscription} on each of {@code topics}
     * (the subscriber's {@code shards}, default {@value RabbitTopology#DEFAULT_SHARDS}).
     */
    public Builder subscription(String subscription, int shards, String... topics) {
      Objects.requireNonNull(subscription, "subscription");
      if (shards < 1 || shards > RabbitTopology.SLOTS) {
        throw new IllegalArgumentException(
            "shards must be between 1 and " + RabbitTopology.SLOTS + ", was " + shards);
      }
      if (topics.length == 0) {
        throw new IllegalArgumentException(
            "subscription '" + subscription + "' needs at least one topic");
      }
      for (String topic : topics) {
        Objects.requireNonNull(topic, "topic");
        watched.put(subscription + "\n" + topic, new Watched(subscription, topic, shards));
      }
      return this;
    }

    /** Validates and builds the probe (not yet connected). */
    public RabbitLagProbe build() {
      if (watched.isEmpty()) {
        throw new IllegalArgumentException("the lag probe needs at least one subscription");
      }
      return new RabbitLagProbe(this);
    }
  }
}
