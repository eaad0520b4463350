package com.example.shop.orders;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/** With {@code shop.load.orders=N}, places N orders at start-up (the crash test's load). */
@Component
@ConditionalOnProperty(prefix = "shop.load", name = "orders")
class LoadGenerator implements CommandLineRunner {

  private final OrderService orders;
  private final int count;

  LoadGenerator(OrderService orders, @Value("${shop.load.orders}") int count) {
    this.orders = orders;
    this.count = count;
  }

  @Override
  public void run(String... args) {
    for (int i = 1; i <= count; i++) {
      orders.place("load-" + i, "customer-" + (i % 16), "sku-" + (1 + i % 3), 1);
      if (i % 100 == 0) {
        System.out.println("placed " + i);
      }
    }
    System.out.println("load done");
  }
}
