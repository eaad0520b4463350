package com.example.shop.inventory;

import com.example.shop.orders.OrderService;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.spring.PostboxListener;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.springframework.stereotype.Service;

/**
 * Reserves stock for each order. The topic is effectively-once (application.yml): the effect is
 * done on the inbox transaction's connection, so each event is applied once, redelivered or not.
 */
@Service
public class Inventory {

  @PostboxListener(topic = "${shop.order-topic:" + OrderService.ORDER_CREATED + "}", name = "inventory")
  void reserve(Delivery delivery, String payload, Connection tx) throws SQLException {
    try (PreparedStatement reserve =
            tx.prepareStatement(
                "UPDATE stock SET reserved = reserved + (?::jsonb->>'quantity')::int"
                    + " WHERE sku = ?::jsonb->>'sku'");
        PreparedStatement record =
            tx.prepareStatement(
                "INSERT INTO reservations (order_id, message_id) VALUES (?::jsonb->>'order', ?::uuid)")) {
      reserve.setString(1, payload);
      reserve.setString(2, payload);
      reserve.executeUpdate();
      record.setString(1, payload);
      record.setString(2, delivery.message().id().toString());
      record.executeUpdate();
    }
  }
}
