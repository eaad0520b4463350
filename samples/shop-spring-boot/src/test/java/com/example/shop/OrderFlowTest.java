package com.example.shop;

import static com.example.shop.TestShop.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.example.shop.orders.OrderRefusedException;
import com.example.shop.orders.OrderService;
import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRelayPublisher;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.actuate.endpoint.IndicatedHealthDescriptor;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The shop as it runs: {@code OrderService} writes the order (JPA) and its event in one
 * transaction, the relay publishes it to Kafka, and {@code Inventory} reserves stock once per
 * event, on the test kit's PostgreSQL and Kafka.
 */
@SpringBootTest
@DirtiesContext // stopped while the test kit's broker and database still run
class OrderFlowTest {

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    TestShop.properties(registry);
  }

  @Autowired OrderService orders;
  @Autowired HealthEndpoint health;
  @Autowired MeterRegistry meters;

  @Test
  void eachOrderIsReservedOnceEvenWhenItsEventIsDeliveredTwice() throws Exception {
    String customer = "c-" + UUID.randomUUID();
    long reservedBefore = count("SELECT reserved FROM stock WHERE sku = 'sku-2'");
    List<Message> events = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      events.add(orders.place(customer + "-o" + i, customer, "sku-2", 2));
    }
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            count("SELECT count(*) FROM reservations WHERE order_id LIKE ?", customer + "-%")
                == 10);

    // the broker delivers the first event again; a later order of the same customer (same key,
    // same partition, after the duplicate) is applied, so the duplicate was seen and suppressed
    try (KafkaRelayPublisher raw =
        KafkaRelayPublisher.builder(TestShop.CTX.bootstrapServers()).build()) {
      raw.publish(List.of(events.get(0)));
    }
    orders.place(customer + "-later", customer, "sku-2", 2);
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            count("SELECT count(*) FROM reservations WHERE order_id = ?", customer + "-later")
                == 1);

    assertThat(count("SELECT count(*) FROM reservations WHERE order_id LIKE ?", customer + "-%"))
        .isEqualTo(11);
    assertThat(
            count(
                "SELECT count(*) FROM reservations WHERE message_id = ?::uuid",
                events.get(0).id().toString()))
        .isEqualTo(1);
    assertThat(count("SELECT reserved FROM stock WHERE sku = 'sku-2'") - reservedBefore)
        .isEqualTo(22);
    assertThat(count("SELECT count(*) FROM orders WHERE customer = ?", customer)).isEqualTo(11);
  }

  @Test
  void aRefusedOrderLeavesNoRowNoEventAndNoReservation() {
    String customer = "c-" + UUID.randomUUID();
    assertThatThrownBy(() ->
            orders.place(customer + "-big", customer, "sku-3", OrderService.CREDIT_LIMIT + 1))
        .isInstanceOf(OrderRefusedException.class);

    assertThat(count("SELECT count(*) FROM orders WHERE customer = ?", customer)).isZero();
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", customer)).isZero();

    // a later order of the same customer is reserved, and the refused one never is
    orders.place(customer + "-ok", customer, "sku-3", 1);
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            count("SELECT count(*) FROM reservations WHERE order_id = ?", customer + "-ok") == 1);
    assertThat(count("SELECT count(*) FROM reservations WHERE order_id = ?", customer + "-big"))
        .isZero();
  }

  @Test
  void theHealthEndpointReportsPostboxUpAndItsMetersAreInTheRegistry() {
    await()
        .atMost(Duration.ofSeconds(120))
        .untilAsserted(() -> {
          assertThat(health.health().getStatus()).isEqualTo(Status.UP);
          IndicatedHealthDescriptor postbox =
              (IndicatedHealthDescriptor) health.healthForPath("postbox");
          assertThat(postbox.getStatus()).isEqualTo(Status.UP);
          @SuppressWarnings("unchecked")
          Map<String, Object> consumer =
              (Map<String, Object>) postbox.getDetails().get("consumer inventory");
          assertThat(consumer).containsEntry("pollLoopAlive", true);
          assertThat(((Number) consumer.get("partitions")).intValue()).isEqualTo(3);
          @SuppressWarnings("unchecked")
          Map<String, Object> relay = (Map<String, Object>) postbox.getDetails().get("relay");
          assertThat(relay).containsEntry("running", true);
        });
    assertThat(meters.find("postbox.relay.published").meters()).isNotEmpty();
  }
}
