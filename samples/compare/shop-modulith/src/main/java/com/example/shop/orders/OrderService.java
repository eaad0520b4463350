package com.example.shop.orders;

import org.springframework.context.ApplicationEventPublisher;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places orders: the order row (JPA) and its event publication commit together. */
@Service
public class OrderService {

  public static final int CREDIT_LIMIT = 100;

  private final OrderRepository orders;
  private final ApplicationEventPublisher events;

  public OrderService(OrderRepository orders, ApplicationEventPublisher events) {
    this.orders = orders;
    this.events = events;
  }

  @Transactional
  public OrderCreated place(String orderId, String customer, String sku, int quantity) {
    orders.saveAndFlush(new PurchaseOrder(orderId, customer, sku, quantity));
    OrderCreated event = new OrderCreated(orderId, customer, sku, quantity);
    events.publishEvent(event);
    if (quantity > CREDIT_LIMIT) {
      throw new OrderRefusedException("order " + orderId + " is over the credit limit");
    }
    return event;
  }
}
