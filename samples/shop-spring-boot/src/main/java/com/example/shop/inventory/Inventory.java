package com.example.shop.inventory;

import com.example.shop.orders.OrderService;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.spring.PostboxListener;
import org.springframework.stereotype.Service;

/**
 * Reserves stock for each order, then tells the warehouse. The topic is effectively-once
 * (application.yml): the handler runs in a Spring transaction that also holds the event's dedupe
 * record, so the {@code @Transactional} {@link Reservations} service joins it and its {@code
 * JdbcTemplate} writes commit with that record or not at all: each event is applied once,
 * redelivered or retried. The id is the consumer group and the inbox's name: renaming this method
 * or class changes nothing.
 */
@Service
public class Inventory {

  private final Reservations reservations;
  private final Warehouse warehouse;

  Inventory(Reservations reservations, Warehouse warehouse) {
    this.reservations = reservations;
    this.warehouse = warehouse;
  }

  @PostboxListener(id = "inventory", topic = "${shop.order-topic:" + OrderService.ORDER_CREATED + "}")
  void reserve(Delivery delivery, OrderCreated order) {
    reservations.reserve(order, delivery.message().id());
    warehouse.reserved(order); // if this throws, the reservation above rolls back and is retried
  }
}
