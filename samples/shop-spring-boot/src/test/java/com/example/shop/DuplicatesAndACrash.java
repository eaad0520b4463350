package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.example.shop.orders.OrderService;
import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The exactly-once scenario both Kafka tests run: {@value #ORDERS} orders of one customer are
 * placed ({@code OrderService}: the JPA row and the outbox event in one transaction) and relayed;
 * every event is then published a second time with the same id (what a relay does with the batch
 * in flight when it crashed); a later order of the same customer (same key, behind the copies) is
 * the sign that all were handled. The listener's first attempt at each order fails after its
 * {@code JdbcTemplate} writes ({@link WarehouseTimingOutOnce}).
 */
final class DuplicatesAndACrash {

  static final int ORDERS = 5;
  static final int QUANTITY = 3;

  private DuplicatesAndACrash() {}

  /** Runs it; {@code raw} publishes the copies on the application's broker. */
  static void run(OrderService orders, KafkaRelayPublisher raw, JdbcTemplate db) throws Exception {
    String customer = "c-" + UUID.randomUUID();
    long reservedBefore = reserved(db);
    List<String> ids = new ArrayList<>();
    List<Message> events = new ArrayList<>();
    for (int i = 0; i < ORDERS; i++) {
      ids.add(customer + "-o" + i);
      events.add(orders.place(ids.get(i), customer, "sku-1", QUANTITY));
    }
    assertThat(raw.publish(events)) // every event delivered twice
        .allMatch(outcome -> outcome instanceof PublishOutcome.Acknowledged);
    orders.place(customer + "-later", customer, "sku-1", QUANTITY);
    await()
        .atMost(Duration.ofSeconds(180))
        .until(() ->
            count(db, "SELECT count(*) FROM reservations WHERE order_id = ?", customer + "-later")
                >= 1); // then counted exactly below

    int placed = ORDERS + 1;
    assertThat(count(db, "SELECT count(*) FROM orders WHERE customer = ?", customer))
        .isEqualTo(placed);
    assertThat(count(db, "SELECT count(*) FROM reservations WHERE order_id LIKE ?", customer + "-%"))
        .as("reservations of %d orders, each event delivered twice and failing once", placed)
        .isEqualTo(placed);
    assertThat(
            count(
                db,
                "SELECT count(DISTINCT order_id) FROM reservations WHERE order_id LIKE ?",
                customer + "-%"))
        .isEqualTo(placed);
    assertThat(reserved(db) - reservedBefore).isEqualTo((long) placed * QUANTITY);
    // each order's first attempt did fail after its writes: the crash was exercised
    assertThat(WarehouseTimingOutOnce.TIMED_OUT)
        .containsAll(ids)
        .contains(customer + "-later");
  }

  private static long reserved(JdbcTemplate db) {
    return count(db, "SELECT reserved FROM stock WHERE sku = 'sku-1'");
  }

  static long count(JdbcTemplate db, String sql, Object... args) {
    return db.queryForObject(sql, Long.class, args);
  }
}
