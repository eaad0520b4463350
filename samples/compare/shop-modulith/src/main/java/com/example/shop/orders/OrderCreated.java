package com.example.shop.orders;

import org.springframework.modulith.events.Externalized;

/** The event, stored in the publication registry and sent to Kafka keyed by customer. */
@Externalized("shop.order-created::#{customer()}")
public record OrderCreated(String order, String customer, String sku, int quantity) {}
