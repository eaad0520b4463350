package dev.postbox.rabbitmq;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The requesting side of the durable request ITs (an orders service asking payments to authorise
 * each order's charge): its tables, the order written with its request in one transaction, and the
 * {@code EFFECTIVELY_ONCE} reply subscription that records each reply with the order.
 */
final class DurableOrders {

  private DurableOrders() {}

  /** The orders' tables and the payments' effect table (no unique constraint: a repeat shows). */
  static void createTables(DataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, authorised_charge bigint)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS charge (n bigserial PRIMARY KEY, request_id uuid NOT NULL)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS reply_handled (request_id uuid NOT NULL, charge bigint NOT"
              + " NULL)");
    }
  }

  /** Writes order {@code orderId} and its durable request to {@code requestTopic} in one commit. */
  static Message order(DataSource ds, DurableRequests payments, String requestTopic, String orderId)
      throws Exception {
    Message request =
        payments.request(
            Message.builder(requestTopic, "charge.authorise")
                .key(orderId)
                .jsonPayload("{\"order\":\"" + orderId + "\"}")
                .build());
    Outbox.postgres()
        .inTransaction(
            ds,
            tx -> {
              try (PreparedStatement ps =
                  tx.connection().prepareStatement("INSERT INTO orders (id) VALUES (?)")) {
                ps.setString(1, orderId);
                ps.executeUpdate();
              }
              tx.write(request);
              return null;
            });
    return request;
  }

  /**
   * The orders' reply subscriber ({@code subscription} on {@code replyTopic}, two shards): each
   * reply recorded and its charge set on its order, in the reply's inbox transaction.
   */
  static RabbitSubscriber replySubscriber(
      String uri, DataSource ds, DurableRequests payments, String replyTopic, String subscription) {
    Subscription sub =
        Subscription.builder(subscription)
            .topics(replyTopic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    return RabbitSubscriber.builder(uri, sub)
        .shards(2)
        .inbox(PostgresInboxStore.create(ds))
        .deadLetters(PostgresDeadLetterStore.create(ds))
        .handler(
            payments.replyHandler((reply, d) -> {
              long charge = Long.parseLong(reply.payload().asString().replaceAll("[^0-9]", ""));
              Connection c = d.connection().orElseThrow();
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO reply_handled (request_id, charge) VALUES (?, ?)")) {
                ps.setObject(1, reply.requestId());
                ps.setLong(2, charge);
                ps.executeUpdate();
              }
              try (PreparedStatement ps =
                  c.prepareStatement("UPDATE orders SET authorised_charge = ? WHERE id = ?")) {
                ps.setLong(1, charge);
                ps.setString(2, reply.message().key().orElseThrow());
                ps.executeUpdate();
              }
            }))
        .build();
  }

  /** The result of {@code sql}, a single count. */
  static long count(DataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
