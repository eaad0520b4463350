package com.example.shop;

import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;

/** The orders service: an order row and its event, in one transaction. */
public final class Orders {

  public static final String TOPIC_BASE = "shop.orders";

  private final DataSource dataSource;
  private final Outbox outbox = Outbox.postgres();
  private final String topic;

  public Orders(DataSource dataSource, String topic) {
    this.dataSource = dataSource;
    this.topic = topic;
  }

  /** Creates the business table (a real service would use its own migrations). */
  public void createTable() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.createStatement()
          .execute(
              "CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, customer text NOT NULL,"
                  + " sku text NOT NULL, quantity int NOT NULL)");
    }
  }

  /** Places an order: the row and the {@code order.created} event commit together, or neither. */
  public void place(String orderId, String customer, String sku, int quantity) {
    outbox.inTransaction(
        dataSource,
        tx -> {
          try (PreparedStatement ps =
              tx.connection()
                  .prepareStatement(
                      "INSERT INTO orders (id, customer, sku, quantity) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, orderId);
            ps.setString(2, customer);
            ps.setString(3, sku);
            ps.setInt(4, quantity);
            ps.executeUpdate();
          }
          String json =
              "{\"order\":\"%s\",\"sku\":\"%s\",\"quantity\":%d}".formatted(orderId, sku, quantity);
          tx.write(
              Message.builder(topic, "order.created")
                  .key(customer)
                  .jsonPayload(json)
                  .build());
          return null;
        });
  }
}
