package com.example.shop.orders;

import dev.postbox.core.Message;
import dev.postbox.spring.TransactionalOutbox;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places orders: the order row (JPA) and its {@code order.created} event commit together. */
@Service
public class OrderService {

  /** The topic of order events ({@code shop.order-topic}); its delivery row is in application.yml. */
  public static final String ORDER_CREATED = "shop.order-created";

  /** Orders above this quantity are refused by the credit check, after they were written. */
  public static final int CREDIT_LIMIT = 100;

  private final OrderRepository orders;
  private final TransactionalOutbox outbox;
  private final String topic;

  public OrderService(
      OrderRepository orders,
      TransactionalOutbox outbox,
      @Value("${shop.order-topic:" + ORDER_CREATED + "}") String topic) {
    this.orders = orders;
    this.outbox = outbox;
    this.topic = topic;
  }

  /** Places an order; returns the event written with it. */
  @Transactional
  public Message place(String orderId, String customer, String sku, int quantity) {
    orders.saveAndFlush(new PurchaseOrder(orderId, customer, sku, quantity));
    Message event =
        Message.builder(topic, "order.created")
            .key(customer)
            .jsonPayload(
                "{\"order\":\"%s\",\"sku\":\"%s\",\"quantity\":%d}"
                    .formatted(orderId, sku, quantity))
            .build();
    outbox.write(event);
    if (quantity > CREDIT_LIMIT) {
      throw new OrderRefusedException("order " + orderId + " is over the credit limit");
    }
    return event;
  }
}
