package com.example.shop.inventory;

import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Stock reservations with {@code JdbcTemplate}. {@code @Transactional} (REQUIRED): called from the
 * listener it joins the listener's transaction; called from elsewhere it runs in its own.
 */
@Service
public class Reservations {

  private final JdbcTemplate jdbc;

  Reservations(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @Transactional
  public void reserve(OrderCreated order, UUID eventId) {
    jdbc.update(
        "UPDATE stock SET reserved = reserved + ? WHERE sku = ?", order.quantity(), order.sku());
    jdbc.update(
        "INSERT INTO reservations (order_id, message_id) VALUES (?, ?)", order.order(), eventId);
  }
}
