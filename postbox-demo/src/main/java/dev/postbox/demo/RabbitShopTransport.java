package dev.postbox.demo;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.core.reply.LateReplyListener;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitRequester;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.RabbitMqServer;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The shop on RabbitMQ ({@code ./postbox demo --transport rabbitmq}): a private node started from
 * this machine's {@code rabbitmq-server} by the test kit's {@link RabbitMqServer} (its own ports
 * and folders), or the broker at {@value RabbitMqServer#URL_ENV}. The orders and stock topics are
 * exchanges sharded by key slot ({@link RabbitTopology}); the inventory consumes its {@value
 * #SHARDS} shard queues of the orders exchange, the observer its own {@value #SHARDS}, and the
 * stock exchange gets one audit queue so that {@code stock.updated} is routable (the relay
 * publishes mandatory: an unroutable message would be a failed row).
 *
 * <p>One difference from Kafka, in how the inventory is told apart: "not yet done" is read from the
 * inventory's queues (ready messages, then nothing changing in the inventory's tables for a second,
 * since AMQP does not report unacked messages without the management plugin). The wholesale keys
 * are held back during the warehouse outage by ordered parking, as on Kafka.
 */
final class RabbitShopTransport implements ShopTransport {

  /** Shard queues per subscription (the subscriber's default). */
  static final int SHARDS = RabbitTopology.DEFAULT_SHARDS;

  static final String OBSERVER = "shop-observer";
  static final String AUDIT = "shop-audit";

  private static final Object LOCK = new Object();
  private static RabbitMqServer shared;

  private final String uri;
  private final String describe;

  private RabbitShopTransport(String uri, String describe) {
    this.uri = uri;
    this.describe = describe;
  }

  static RabbitShopTransport start() {
    return new RabbitShopTransport(server().uri(), describe(server()));
  }

  /** Uses {@code server} as the JVM's RabbitMQ (a test's shared server). */
  static void use(RabbitMqServer server) {
    synchronized (LOCK) {
      shared = server;
    }
  }

  /** The JVM's RabbitMQ: {@value RabbitMqServer#URL_ENV}, else a private node started now. */
  static RabbitMqServer server() {
    synchronized (LOCK) {
      if (shared == null) {
        String url = System.getenv(RabbitMqServer.URL_ENV);
        if (url != null && !url.isBlank()) {
          shared = RabbitMqServer.external(url);
        } else {
          shared =
              RabbitMqServer.startPrivate(
                  RabbitMqServer.findScript()
                      .orElseThrow(() ->
                          new IllegalStateException(
                              "no rabbitmq-server installed (looked for "
                                  + RabbitMqServer.BINARY_ENV
                                  + ", "
                                  + RabbitMqServer.DEBIAN_SCRIPT
                                  + " and the PATH): install RabbitMQ or set "
                                  + RabbitMqServer.URL_ENV)));
        }
      }
      return shared;
    }
  }

  private static String describe(RabbitMqServer s) {
    return s.isExternal() ? "RabbitMQ at " + RabbitMqServer.URL_ENV : "RabbitMQ node process";
  }

  @Override
  public Kind kind() {
    return Kind.RABBITMQ;
  }

  @Override
  public String address() {
    return uri;
  }

  @Override
  public String describe() {
    return describe;
  }

  private Connection connect(String name) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    return f.newConnection(name);
  }

  @Override
  public void createTopics(String ordersTopic, String stockTopic, String inventoryGroup)
      throws Exception {
    try (Connection c = connect("shop-setup");
        Channel ch = c.createChannel()) {
      RabbitTopology.declareShards(ch, inventoryGroup, ordersTopic, SHARDS);
      RabbitTopology.declareShards(ch, OBSERVER, ordersTopic, SHARDS);
      RabbitTopology.declareShards(ch, AUDIT, stockTopic, 1);
    }
  }

  @Override
  public void createPaymentTopics(String requestTopic, String replyTopic, String paymentsGroup)
      throws Exception {
    try (Connection c = connect("shop-setup");
        Channel ch = c.createChannel()) {
      RabbitTopology.declareShards(ch, paymentsGroup, requestTopic, SHARDS);
    }
  }

  @Override
  public Requester requester(String replyTopic, LateReplyListener late) {
    return RabbitRequester.builder(uri).name("orders").lateReplyListener(late).build().start();
  }

  @Override
  public LagGauges lagGauges(
      dev.postbox.core.metrics.PostboxMetrics metrics, String group, String topic) {
    dev.postbox.rabbitmq.RabbitLagProbe probe =
        dev.postbox.rabbitmq.RabbitLagProbe.builder(uri)
            .subscription(group, SHARDS, topic)
            .build()
            .bindTo(metrics);
    return new LagGauges() {
      @Override
      public void refresh() {
        // the gauges read the queues themselves (at most once per second)
      }

      @Override
      public void close() {
        probe.close();
      }
    };
  }

  @Override
  public void observe(String topic, ShopObserver observer, AtomicBoolean running) {
    try (Connection c = connect("shop-observer")) {
      for (int i = 0; i < SHARDS; i++) {
        Channel ch = c.createChannel();
        ch.basicQos(2000);
        ch.basicConsume(
            RabbitTopology.queue(OBSERVER, topic, i),
            true,
            new DefaultConsumer(ch) {
              @Override
              public void handleDelivery(
                  String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
                observer.observed(
                    RabbitMessages.fromDelivery(topic, envelope, properties, body),
                    System.nanoTime());
              }
            });
      }
      while (running.get()) {
        Thread.sleep(100);
      }
    } catch (Exception e) {
      System.out.println("observer failed: " + e);
    }
  }

  @Override
  public long notYetDone(HikariDataSource ds, String group, String topic) throws Exception {
    try (Connection c = connect("shop-audit");
        Channel ch = c.createChannel()) {
      long ready = ready(ch, group, topic);
      long finished = finished(ds);
      Thread.sleep(1000);
      long readyAfter = ready(ch, group, topic);
      long finishedAfter = finished(ds);
      return ready == 0 && readyAfter == 0 && finished == finishedAfter
          ? 0
          : Math.max(1, readyAfter);
    }
  }

  private static long ready(Channel ch, String group, String topic) throws Exception {
    long ready = 0;
    for (int i = 0; i < SHARDS; i++) {
      ready += ch.queueDeclarePassive(RabbitTopology.queue(group, topic, i)).getMessageCount();
    }
    return ready;
  }

  /** Deliveries the inventory finished: effects, suppressions and dead letters. */
  private static long finished(HikariDataSource ds) throws Exception {
    return ShopAudit.queryLong(
        ds,
        "SELECT (SELECT count(*) FROM inventory_effects) + (SELECT count(*) FROM"
            + " inventory_suppressed) + (SELECT count(*) FROM postbox_dead_letter)");
  }

  @Override
  public Function<DeadLetter, Message> deadLetterDecoder() {
    return dev.postbox.rabbitmq.RabbitDeadLetters.decoder();
  }

  @Override
  public String heldKeysQuery() {
    return "SELECT DISTINCT msg_key FROM postbox_parked";
  }
}
