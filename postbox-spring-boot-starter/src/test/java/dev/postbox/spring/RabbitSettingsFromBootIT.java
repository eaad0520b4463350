package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.stereotype.Service;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A RabbitMQ application configured through Spring Boot's {@code spring.rabbitmq.*} only ({@code
 * addresses}, {@code username}, {@code password}, {@code virtual-host}; no {@code
 * postbox.rabbitmq.uri}), on the test kit's PostgreSQL and RabbitMQ node: the first address has no
 * broker, so the relay, the listener and the queue-depth reads reach the node through the second;
 * an outbox message is published and applied by an effectively-once listener. Skipped with one line
 * where there is no RabbitMQ (failing instead under {@code CI}).
 */
@SpringBootTest(classes = RabbitSettingsFromBootIT.App.class)
@DirtiesContext
class RabbitSettingsFromBootIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-rabbit-boot-settings");
  static final String ORDERS =
      "spring.rabbit-boot.orders-" + UUID.randomUUID().toString().substring(0, 8);

  @BeforeAll
  static void rabbitOrSkip() {
    RabbitMqServer.sharedOrSkip();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    URI broker = URI.create(RabbitMqServer.sharedOrSkip().uri());
    String[] user = broker.getRawUserInfo().split(":", 2);
    String vhost = broker.getRawPath().isEmpty() ? "/" : broker.getRawPath().substring(1);
    registry.add("postbox.transport", () -> "rabbitmq");
    // nothing listens on port 1: the clients go on to the node's address
    registry.add(
        "spring.rabbitmq.addresses",
        () -> "127.0.0.1:1," + broker.getHost() + ":" + broker.getPort());
    registry.add("spring.rabbitmq.username", () -> decode(user[0]));
    registry.add("spring.rabbitmq.password", () -> decode(user[1]));
    registry.add("spring.rabbitmq.virtual-host", () -> decode(vhost));
    registry.add("postbox.rabbitmq.shards", () -> "2");
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + ORDERS + "].concurrency", () -> "2");
    registry.add("postbox.relay.poll-interval", () -> "200ms");
    registry.add("test.orders-topic", () -> ORDERS);
  }

  private static String decode(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(ShipmentListener.class)
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      DataSource ds = CTX.dataSource();
      new JdbcTemplate(ds)
          .execute("CREATE TABLE IF NOT EXISTS shipments (order_id text PRIMARY KEY)");
      return ds;
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    JdbcTemplate jdbcTemplate(DataSource dataSource) {
      return new JdbcTemplate(dataSource);
    }
  }

  @Service
  static class ShipmentListener {
    @Autowired JdbcTemplate jdbc;

    @PostboxListener(id = "shipping-boot-settings", topic = "${test.orders-topic}")
    void ship(String payload) {
      jdbc.update("INSERT INTO shipments (order_id) VALUES (?)", payload.replace("\"", ""));
    }
  }

  @Autowired PostboxProperties properties;
  @Autowired TransactionalOutbox outbox;
  @Autowired PlatformTransactionManager transactionManager;
  @Autowired JdbcTemplate jdbc;
  @Autowired HealthIndicator postboxHealthIndicator;

  @Test
  void theRelayAndAListenerConnectThroughSpringBootsRabbitSettings() {
    URI broker = URI.create(RabbitMqServer.sharedOrSkip().uri());
    assertThat(properties.getRabbitmq().getUri()).contains("@127.0.0.1:1/");
    assertThat(properties.getRabbitmq().fromSpring().addresses())
        .containsExactly("127.0.0.1:1", broker.getHost() + ":" + broker.getPort());

    String orderId = "o-" + UUID.randomUUID();
    new TransactionTemplate(transactionManager)
        .executeWithoutResult(s ->
            outbox.write(
                Message.builder(ORDERS, "order.placed")
                    .key(orderId)
                    .jsonPayload("\"" + orderId + "\"")
                    .build()));
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            jdbc.queryForObject(
                    "SELECT count(*) FROM shipments WHERE order_id = ?", Long.class, orderId)
                == 1);

    // the queue depths are read through the same addresses
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(() -> {
          Health health = postboxHealthIndicator.health();
          assertThat(health.getDetails().toString()).contains("queued=0");
        });
  }
}
