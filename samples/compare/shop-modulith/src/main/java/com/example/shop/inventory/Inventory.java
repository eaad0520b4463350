package com.example.shop.inventory;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Reserves stock for each order event that Kafka delivers (at least once: no inbox). */
@Service
public class Inventory {

  private final JdbcTemplate jdbc;

  public Inventory(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @Transactional
  @KafkaListener(topics = "shop.order-created", groupId = "inventory")
  void reserve(ConsumerRecord<String, String> record) {
    String payload = record.value(); // the raw JSON (a String parameter would go through a converter)
    jdbc.update(
        "UPDATE stock SET reserved = reserved + (?::jsonb->>'quantity')::int"
            + " WHERE sku = ?::jsonb->>'sku'",
        payload,
        payload);
    jdbc.update("INSERT INTO reservations (order_id) VALUES (?::jsonb->>'order')", payload);
  }
}
