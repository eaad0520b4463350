package com.example.shop;

import com.example.shop.inventory.Warehouse;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * The warehouse's API times out at the first call for each order: the listener has written the
 * reservation with {@code JdbcTemplate} and fails before its transaction commits (a crash between
 * the effect and the commit). Imported by the tests that want it.
 */
@TestConfiguration(proxyBeanMethods = false)
public class WarehouseTimingOutOnce {

  /** The orders whose first call timed out. */
  public static final Set<String> TIMED_OUT = ConcurrentHashMap.newKeySet();

  @Bean
  @Primary
  Warehouse warehouseTimingOutOnce() {
    return order -> {
      if (TIMED_OUT.add(order.order())) {
        throw new IllegalStateException(
            "the warehouse did not answer for order " + order.order() + " (first call)");
      }
    };
  }
}
