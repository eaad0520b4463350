package dev.postbox.spring;

import com.rabbitmq.client.Address;
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
import javax.net.ssl.SSLContext;
import org.springframework.boot.ssl.SslBundles;

/**
 * The RabbitMQ transport ({@code postbox.transport: rabbitmq}): {@link RabbitRelayPublisher}
 * (publisher confirms), {@link RabbitSubscriber} (shard quorum queues, {@code
 * postbox.rabbitmq.shards} and {@code prefetch}; shared among instances with {@code shard-leases}),
 * a direct at-most-once sender (no confirms, no retries) and the consumers' lag as the messages
 * waiting in their shard queues, all on {@code postbox.rabbitmq.uri} (or {@code spring.rabbitmq.*}:
 * {@link RabbitClientSettings}, with TLS).
 */
final class RabbitWiring implements TransportWiring {

  private final PostboxProperties properties;
  private final Endpoint endpoint;
  private final Object lock = new Object();
  private Connection admin; // guarded by lock: reads the queue depths

  /**
   * The wiring of {@code properties}; TLS from {@code spring.rabbitmq.ssl.*} (an SSL bundle of
   * {@code sslBundles}).
   *
   * @throws PostboxConfigurationException if the TLS context cannot be made
   */
  RabbitWiring(PostboxProperties properties, Optional<SslBundles> sslBundles) {
    this.properties = properties;
    RabbitClientSettings spring = properties.getRabbitmq().fromSpring();
    this.endpoint =
        new Endpoint(
            properties.getRabbitmq().getUri(), spring.addresses(), spring.sslContext(sslBundles));
  }

  /**
   * Where and how every client connects: the URI, further addresses, TLS.
   *
   * @param uri {@code postbox.rabbitmq.uri}, or the one of {@code spring.rabbitmq.*}
   * @param addresses the brokers to try in order, {@code host:port} (empty: the URI's)
   * @param tls the TLS context (empty: as the URI says)
   */
  private record Endpoint(String uri, List<String> addresses, Optional<SSLContext> tls) {

    RabbitRelayPublisher.Builder publisher() {
      RabbitRelayPublisher.Builder b = RabbitRelayPublisher.builder(uri);
      if (!addresses.isEmpty()) {
        b.addresses(addresses);
      }
      tls.ifPresent(b::sslContext);
      return b;
    }

    RabbitSubscriber.Builder subscriber(Subscription s) {
      RabbitSubscriber.Builder b = RabbitSubscriber.builder(uri, s);
      if (!addresses.isEmpty()) {
        b.addresses(addresses);
      }
      tls.ifPresent(b::sslContext);
      return b;
    }

    /** A connection of the starter's own (queue depths, at-most-once sends). */
    Connection connect(String name) throws IOException, TimeoutException {
      ConnectionFactory f = factory(uri);
      tls.ifPresent(context -> {
        f.useSslProtocol(context);
        f.enableHostnameVerification();
      });
      if (addresses.isEmpty()) {
        return f.newConnection(name);
      }
      // in the order given, as the adapters connect (the client would shuffle them)
      List<Address> inOrder = addresses.stream().map(Address::parseAddress).toList();
      return f.newConnection(
          null, // the factory's executor
          new com.rabbitmq.client.ListAddressResolver(inOrder) {
            @Override
            public List<Address> maybeShuffle(List<Address> input) {
              return input;
            }
          },
          name);
    }
  }

  private PostboxProperties.Rabbitmq rabbit() {
    return properties.getRabbitmq();
  }

  @Override
  public RelayPublisher relayPublisher() {
    return endpoint.publisher().confirmTimeout(rabbit().getConfirmTimeout()).build();
  }

  @Override
  public Consumer consumer(
      PostboxConsumer c,
      boolean newAtEnd, // a queue holds what was routed to it since it was declared
      Stores stores,
      PostboxMetrics metrics,
      Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
    RabbitSubscriber.Builder b =
        endpoint
            .subscriber(c.subscription())
            .handler(c.handler())
            .metrics(metrics)
            .shards(rabbit().getShards())
            .prefetch(rabbit().getPrefetch());
    openTelemetry.ifPresent(b::openTelemetry);
    stores.inbox().ifPresent(b::inbox);
    stores.idempotency().ifPresent(b::idempotencyStore);
    stores.deadLetters().ifPresent(b::deadLetters);
    stores.parking().ifPresent(b::parking);
    stores
        .shardLeases()
        .ifPresent(l -> b.shardLeases(l).shardLeaseTtl(rabbit().getShardLeaseTtl()));
    stores.ageStore().ifPresent(b::ageStore);
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
        // the oldest delivery it received and has not finished (worst shard queue held here)
        detail.put(
            "lagAge",
            subscriber.oldestUnfinishedAges().values().stream()
                .max(java.time.Duration::compareTo)
                .orElse(java.time.Duration.ZERO)
                .toString());
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
    return new DirectSender(endpoint);
  }

  /**
   * Messages ready in each consumer's shard queues ({@code queued}: published, not yet delivered to
   * it), read with a passive declaration per queue (the age, {@code lagAge}, is the subscriber's:
   * RabbitMQ 3.10 reports none for quorum queues).
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
      admin = endpoint.connect("postbox-health");
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
    private final Endpoint endpoint;
    private final Set<String> declared = ConcurrentHashMap.newKeySet();
    private final AtomicLong dropped = new AtomicLong();
    private Connection connection; // guarded by this
    private Channel channel; // guarded by this

    DirectSender(Endpoint endpoint) {
      this.endpoint = endpoint;
    }

    @Override
    public synchronized void send(Message message) {
      try {
        if (channel == null || !channel.isOpen()) {
          discard();
          connection = endpoint.connect("postbox-at-most-once");
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
