package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import dev.postbox.testkit.RabbitTlsListener;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
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
 * A RabbitMQ application reaching its broker over TLS through Spring Boot's {@code
 * spring.rabbitmq.ssl.*} only (a trust store holding the broker's self-signed certificate; the host
 * name is verified), against a private test kit node with a TLS listener: the relay publishes and
 * an effectively-once listener applies over TLS. Skipped with one line where RabbitMQ is not
 * installed.
 */
@SpringBootTest(classes = RabbitTlsFromBootIT.App.class)
@DirtiesContext
class RabbitTlsFromBootIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-rabbit-tls");
  static final String ORDERS =
      "spring.rabbit-tls.orders-" + UUID.randomUUID().toString().substring(0, 8);
  static RabbitMqServer node;

  static synchronized RabbitTlsListener tls() {
    if (node == null) {
      Optional<Path> script = RabbitMqServer.findScript();
      Assumptions.assumeTrue(script.isPresent(), "RabbitMQ TLS test skipped: no rabbitmq-server");
      node = RabbitMqServer.startPrivateWithTls(script.get());
    }
    return node.tlsListener().orElseThrow();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    RabbitTlsListener tls = tls();
    registry.add("postbox.transport", () -> "rabbitmq");
    registry.add("spring.rabbitmq.host", tls::host);
    registry.add("spring.rabbitmq.port", () -> Integer.toString(tls.port()));
    registry.add("spring.rabbitmq.ssl.enabled", () -> "true");
    registry.add("spring.rabbitmq.ssl.trust-store", () -> "file:" + tls.trustStore());
    registry.add("spring.rabbitmq.ssl.trust-store-type", () -> "PKCS12");
    registry.add("spring.rabbitmq.ssl.trust-store-password", tls::trustStorePassword);
    registry.add("postbox.rabbitmq.shards", () -> "1");
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + ORDERS + "].concurrency", () -> "2");
    registry.add("postbox.relay.poll-interval", () -> "200ms");
    registry.add("test.orders-topic", () -> ORDERS);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Shipping.class)
  static class App {
    /** The private node, stopped once the application closed (its lifecycle beans first). */
    @Bean(destroyMethod = "close")
    RabbitMqServer tlsNode() {
      tls();
      return node;
    }

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
  static class Shipping {
    @Autowired JdbcTemplate jdbc;

    @PostboxListener(id = "shipping-tls", topic = "${test.orders-topic}")
    void ship(String payload) {
      jdbc.update("INSERT INTO shipments (order_id) VALUES (?)", payload.replace("\"", ""));
    }
  }

  @Autowired PostboxProperties properties;
  @Autowired TransactionalOutbox outbox;
  @Autowired PlatformTransactionManager transactionManager;
  @Autowired JdbcTemplate jdbc;

  @Test
  void theRelayAndAListenerReachTheBrokerOverTls() {
    assertThat(properties.getRabbitmq().getUri()).endsWith(":" + tls().port() + "/%2F");
    assertThat(properties.getRabbitmq().fromSpring().tls()).isTrue();
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
  }
}
