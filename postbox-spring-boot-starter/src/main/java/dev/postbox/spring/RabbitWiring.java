package dev.postbox.spring;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The RabbitMQ transport ({@code postbox.transport: rabbitmq}): {@link RabbitRelayPublisher}
 * (publisher confirms), {@link RabbitSubscriber} (shard quorum queues, {@code
 * postbox.rabbitmq.shards} and {@code prefetch}; shared among instances with {@code shard-leases}),
 * a direct at-most-once sender (no confirms, no retries) and the consumers' lag as the messages
 * waiting in their shard queues, all on {@code postbox.rabbitmq.uri}.
 */
final class RabbitWiring implements TransportWiring {

  private final PostboxProperties properties;
  private final Object lock = new Object();
  private Connection admin; // guarded by lock: reads the queue depths

  RabbitWiring(PostboxProperties properties) {
    this.properties = properties;
  }

  private PostboxProperties.Rabbitmq rabbit() {
    return properties.getRabbitmq();
  }

  @Override
  public RelayPublisher relayPublisher() {
    return RabbitRelayPublisher.builder(rabbit().getUri())
        .confirmTimeout(rabbit().getConfirmTimeout())
        .build();
  }

  @Override
  public Consumer consumer(
      PostboxConsumer c,
      boolean newAtEnd, // a queue holds what was routed to it since it was declared
      Stores stores,
      PostboxMetrics metrics,
      Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
    RabbitSubscriber.Builder b =
        RabbitSubscriber.builder(rabbit().getUri(), c.subscription())
            .handler(c.handler())
            .metrics(metrics)
            .shards(rabbit().getShards())
            .prefetch(rabbit().getPrefetch());
    openTelemetry.ifPresent(b::openTelemetry);
    stores.inbox().ifPresent(b::inbox);
    stores.deadLetters().ifPresent(b::deadLetters);
    stores.parking().ifPresent(b::parking);
    stores
        .shardLeases()
        .ifPresent(l -> b.shardLeases(l).shardLeaseTtl(rabbit().getShardLeaseTtl()));
    RabbitSubscriber subscriber = b.build();
    int shards = rabbit().getShards() * c.subscription().topics().size();
    return new Consumer() {
      @Override
      public Optional<String> start() {
        subscriber.start();
        return Optional.empty();
      }

      @Override
      public ConsumerHealth health() {
        Map<String, Object> detail = new LinkedHashMap<>();
        detail.put("connected", subscriber.connected());
        detail.put("shards", shards);
        if (stores.shardLeases().isPresent()) {
          detail.put("heldShards", subscriber.heldShards().toString());
        }
        detail.put("inFlight", subscriber.inFlight());
        // a lost connection is recovered by the client: reported, not DOWN (as Kafka's consumer
        // that cannot reach its broker)
        return new ConsumerHealth(true, detail);
      }

      @Override
      public void close() {
        subscriber.close();
      }
    };
  }

  @Override
  public PostboxPublisher.DirectSender directSender() {
    return new DirectSender(rabbit().getUri());
  }

  /**
   * Messages ready in each consumer's shard queues ({@code queued}: published, not yet delivered to
   * it; RabbitMQ tells no age), read with a passive declaration per queue.
   */
  @Override
  public Map<String, Map<String, Object>> lag(List<Subscription> subscriptions) {
    Map<String, Map<String, Object>> out = new LinkedHashMap<>();
    synchronized (lock) {
      for (Subscription s : subscriptions) {
        long queued = 0;
        try {
          for (String topic : s.topics()) {
            for (int i = 0; i < rabbit().getShards(); i++) {
              queued += depth(RabbitTopology.queue(s.name(), topic, i));
            }
          }
        } catch (IOException | TimeoutException | RuntimeException e) {
          closeAdmin();
          continue; // unknown this time
        }
        out.put(s.name(), Map.of("queued", queued));
      }
    }
    return out;
  }

  private long depth(String queue) throws IOException, TimeoutException {
    if (admin == null || !admin.isOpen()) {
      ConnectionFactory f = factory(rabbit().getUri());
      admin = f.newConnection("postbox-health");
    }
    // a channel per read: a missing queue closes it
    Channel ch = admin.createChannel();
    try {
      return ch.queueDeclarePassive(queue).getMessageCount();
    } finally {
      if (ch.isOpen()) {
        ch.close();
      }
    }
  }

  private void closeAdmin() {
    Connection c = admin;
    admin = null;
    if (c != null) {
      c.abort();
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closeAdmin();
    }
  }

  private static ConnectionFactory factory(String uri) {
    ConnectionFactory f = new ConnectionFactory();
    try {
      f.setUri(uri);
    } catch (Exception e) {
      throw new IllegalArgumentException("postbox.rabbitmq.uri: not an AMQP URI: " + uri, e);
    }
    f.setAutomaticRecoveryEnabled(false);
    f.setConnectionTimeout(5_000);
    return f;
  }

  /**
   * At-most-once sending for the publisher's at-most-once topics: to the topic's exchange, without
   * publisher confirms, the {@code mandatory} flag or retries; a message that cannot be sent (no
   * connection, a closed channel) is dropped and counted, never sent twice. The connection is
   * opened at the first send and after a failure.
   */
  private static final class DirectSender implements PostboxPublisher.DirectSender {
    private final String uri;
    private final Set<String> declared = ConcurrentHashMap.newKeySet();
    private final AtomicLong dropped = new AtomicLong();
    private Connection connection; // guarded by this
    private Channel channel; // guarded by this

    DirectSender(String uri) {
      this.uri = uri;
    }

    @Override
    public synchronized void send(Message message) {
      try {
        if (channel == null || !channel.isOpen()) {
          discard();
          connection = factory(uri).newConnection("postbox-at-most-once");
          channel = connection.createChannel();
        }
        if (!declared.contains(message.topic())) {
          RabbitTopology.declareExchange(channel, message.topic());
          declared.add(message.topic());
        }
        channel.basicPublish(
            RabbitTopology.exchange(message.topic()),
            RabbitMessages.routingKey(message),
            false,
            RabbitMessages.toProperties(message),
            message.payload().bytes());
      } catch (IOException | TimeoutException | RuntimeException e) {
        dropped.incrementAndGet();
        discard();
      }
    }

    @Override
    public long dropped() {
      return dropped.get();
    }

    @Override
    public synchronized void close() {
      discard();
    }

    private void discard() {
      Connection c = connection;
      connection = null;
      channel = null;
      declared.clear();
      if (c != null && c.isOpen()) {
        try {
          c.close(5_000);
        } catch (IOException | RuntimeException e) {
          c.abort();
        }
      }
    }
  }
}
