package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.example.shop.orders.OrderRefusedException;
import com.example.shop.orders.OrderService;
import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.actuate.endpoint.IndicatedHealthDescriptor;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The same shop with the {@code rabbitmq} profile ({@code postbox.transport: rabbitmq}), on the
 * test kit's PostgreSQL (a schema of its own) and RabbitMQ node: each order is reserved once even
 * when its event is delivered twice, a refused order leaves nothing, and health is UP with the
 * listener's shard queues. Skipped with one line where RabbitMQ is not installed (failing instead
 * under {@code CI}).
 */
@SpringBootTest
@ActiveProfiles("rabbitmq")
@DirtiesContext // stopped while the test kit's node and database still run
class OrderFlowRabbitTest {

  static final PostboxTestContext CTX = PostboxTestContext.create("shop-rabbit");

  @BeforeAll
  static void rabbitOrSkip() {
    RabbitMqServer.sharedOrSkip(); // before the context: a skip is one line, not a failed context
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", CTX::jdbcUrl);
    registry.add("postbox.rabbitmq.uri", () -> RabbitMqServer.sharedOrSkip().uri());
    registry.add("postbox.relay.poll-interval", () -> "200ms");
  }

  @Autowired OrderService orders;
  @Autowired HealthEndpoint health;

  private static long count(String sql, Object... args) {
    return new JdbcTemplate(CTX.dataSource()).queryForObject(sql, Long.class, args);
  }

  @Test
  void eachOrderIsReservedOnceEvenWhenItsEventIsDeliveredTwiceAndARefusedOneNever() {
    String customer = "c-" + UUID.randomUUID();
    long reservedBefore = count("SELECT reserved FROM stock WHERE sku = 'sku-2'");
    List<Message> events = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      events.add(orders.place(customer + "-o" + i, customer, "sku-2", 2));
    }
    assertThatThrownBy(() ->
            orders.place(customer + "-big", customer, "sku-2", OrderService.CREDIT_LIMIT + 1))
        .isInstanceOf(OrderRefusedException.class);
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            count("SELECT count(*) FROM reservations WHERE order_id LIKE ?", customer + "-%")
                == 5);

    // RabbitMQ delivers the first event again (same id, same shard queue as the customer's later
    // order, ahead of it): once the later order is reserved, the duplicate was seen and suppressed
    try (RabbitRelayPublisher raw =
        RabbitRelayPublisher.builder(RabbitMqServer.sharedOrSkip().uri()).build()) {
      assertThat(raw.publish(List.of(events.get(0))))
          .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
    orders.place(customer + "-later", customer, "sku-2", 2);
    await()
        .atMost(Duration.ofSeconds(120))
        .until(() ->
            count("SELECT count(*) FROM reservations WHERE order_id = ?", customer + "-later")
                == 1);

    assertThat(count("SELECT count(*) FROM reservations WHERE order_id LIKE ?", customer + "-%"))
        .isEqualTo(6);
    assertThat(count("SELECT reserved FROM stock WHERE sku = 'sku-2'") - reservedBefore)
        .isEqualTo(12);
    assertThat(count("SELECT count(*) FROM orders WHERE customer = ?", customer)).isEqualTo(6);
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", customer))
        .isEqualTo(6); // the refused order's event was rolled back with it
  }

  @Test
  void theHealthEndpointReportsPostboxUpWithTheListenersShardQueues() {
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
          assertThat(consumer).containsEntry("connected", true).containsEntry("shards", 4);
        });
  }
}
