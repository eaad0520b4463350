package dev.postbox.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.reply.ReplyHandler;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaResponder;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.rabbitmq.RabbitResponder;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;

/**
 * The shop's payments service as its own OS process: answers {@code charge.authorise} requests of
 * the orders service (request/reply, {@link PaymentsPhase}) through an {@code EFFECTIVELY_ONCE}
 * subscription whose responder stores each reply with the request's inbox row. The effect is a row
 * in {@code payment_charges} (no unique constraint, so a second charge of an order would be a
 * second row: the demo's {@code duplicate_charges}); the reply names the charge's number, so a
 * repeated request that gets the stored reply gets the same number.
 *
 * <p>A request whose payload says {@code "hold": true} waits until the demo opens {@code
 * payment_gate} (so that its requester times out first, and its reply comes late). The first
 * process is armed to halt between a charge's commit and its reply ({@code
 * consumer.after-commit-before-completed}); the restarted one finds the request applied and sends
 * the stored reply.
 *
 * <p>Arguments: JDBC URL (with the schema), Kafka bootstrap servers (or RabbitMQ's AMQP URI),
 * request topic, subscription name, incarnation number, transport ({@code kafka} or {@code
 * rabbitmq}). Runs until killed or terminated.
 */
public final class PaymentsProcess {

  static final int CONCURRENCY = 4;

  private static final ObjectMapper JSON = new ObjectMapper();

  private PaymentsProcess() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println(
          "usage: PaymentsProcess <jdbc-url> <bootstrap-servers|amqp-uri> <request-topic>"
              + " <subscription> <incarnation> <kafka|rabbitmq>");
      System.exit(2);
    }
    String address = args[1];
    String topic = args[2];
    String name = args[3];
    int incarnation = Integer.parseInt(args[4]);
    ShopTransport.Kind transport = ShopTransport.Kind.of(args[5]);
    HikariConfig hc = new HikariConfig();
    // PostgreSQL's default, named: left to detection, a pool whose first connection meets a
    // database
    // restart keeps isolation -1 and refuses every later connection (HikariCP #1944)
    hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(2 * CONCURRENCY + 2); // an inbox transaction + a gate check each
    hc.setPoolName("payments-" + incarnation);
    HikariDataSource ds = new HikariDataSource(hc);
    Subscription subscription =
        Subscription.builder(name)
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .concurrency(CONCURRENCY)
            .build();
    ReplyHandler handler = d -> authorise(ds, d, incarnation);
    AutoCloseable running;
    if (transport == ShopTransport.Kind.RABBITMQ) {
      RabbitResponder responder =
          RabbitResponder.builder(address)
              .source("/shop/payments")
              .replyType("charge.authorised")
              .build();
      RabbitSubscriber subscriber =
          RabbitSubscriber.builder(address, subscription)
              .shards(RabbitShopTransport.SHARDS)
              .inbox(PostgresInboxStore.create(ds))
              .deadLetters(PostgresDeadLetterStore.create(ds))
              .handler(responder.handler(subscription, handler))
              .build();
      subscriber.start();
      running =
          () -> {
            subscriber.close();
            responder.close();
          };
    } else {
      KafkaResponder responder =
          KafkaResponder.builder(address)
              .source("/shop/payments")
              .replyType("charge.authorised")
              .build();
      KafkaSubscriber subscriber =
          KafkaSubscriber.builder(address, subscription)
              .inbox(PostgresInboxStore.create(ds))
              .deadLetters(PostgresDeadLetterStore.create(ds))
              // static membership: the restarted process takes its predecessor's partitions at once
              .consumerProperty("group.instance.id", name + "-1")
              .consumerProperty("session.timeout.ms", 6000)
              .handler(responder.handler(subscription, handler))
              .build();
      subscriber.start();
      running =
          () -> {
            subscriber.close();
            responder.close();
          };
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              try {
                running.close();
              } catch (Exception e) {
                System.out.println("payments close failed: " + e);
              }
              System.out.println("payments incarnation " + incarnation + " stopped");
              ds.close();
              stopped.countDown();
            }));
    System.out.println("payments " + name + " incarnation " + incarnation + " started");
    stopped.await();
  }

  /** Charges the order on the inbox transaction's connection; the reply names the charge. */
  static Payload authorise(DataSource ds, Delivery d, int incarnation) throws Exception {
    JsonNode request = JSON.readTree(d.message().payload().asString());
    UUID order = UUID.fromString(request.get("order_id").asText());
    long amount = request.get("amount_cents").asLong();
    if (request.path("hold").asBoolean(false)) {
      awaitGate(ds);
    }
    Connection c = d.connection().orElseThrow();
    long charge;
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO payment_charges (request_id, order_id, amount_cents, incarnation)"
                + " VALUES (?, ?, ?, ?) RETURNING id")) {
      ps.setObject(1, d.message().id());
      ps.setObject(2, order);
      ps.setLong(3, amount);
      ps.setInt(4, incarnation);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        charge = rs.getLong(1);
      }
    }
    return Payload.json(
        JSON.writeValueAsString(
            JSON.createObjectNode()
                .put("order_id", order.toString())
                .put("authorised", true)
                .put("charge", charge)
                .put("amount_cents", amount)));
  }

  /** Waits (at most two minutes) until the demo opens the gate. */
  private static void awaitGate(DataSource ds) throws Exception {
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (System.nanoTime() < deadline) {
      try (Connection c = ds.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT bool_or(open) FROM payment_gate");
          ResultSet rs = ps.executeQuery()) {
        if (rs.next() && rs.getBoolean(1)) {
          return;
        }
      }
      Thread.sleep(50);
    }
  }
}
