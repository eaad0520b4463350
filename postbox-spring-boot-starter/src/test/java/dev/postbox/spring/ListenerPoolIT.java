package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
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

/**
 * One connection per running handler, on the test kit's PostgreSQL and Kafka: a pool exactly as
 * large as the listener's concurrency serves that many handlers at once, each writing with {@code
 * JdbcTemplate} (which uses the transaction's connection, not a second one of the pool).
 */
@SpringBootTest(classes = ListenerPoolIT.App.class)
@DirtiesContext
class ListenerPoolIT {

  static final int HANDLERS = 6;
  static final PostboxTestContext CTX = PostboxTestContext.create("spring-listener-pool");
  static final String ORDERS = CTX.topic("listener-pool.orders");
  static final CountDownLatch ALL_RUNNING = new CountDownLatch(HANDLERS);
  static final List<String> FAILURES = new CopyOnWriteArrayList<>();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    registry.add("postbox.relay.enabled", () -> "false");
    registry.add("postbox.consumers.pool-headroom", () -> "0");
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + ORDERS + "].concurrency", () -> String.valueOf(HANDLERS));
    registry.add("test.orders", () -> ORDERS);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Shipping.class)
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      HikariDataSource ds = CTX.newDataSource(HANDLERS);
      // a handler that needs a second connection fails after 2 s rather than Hikari's 30
      ds.setConnectionTimeout(2_000);
      new JdbcTemplate(ds)
          .execute("CREATE TABLE IF NOT EXISTS pool_shipments (order_id text NOT NULL)");
      return ds;
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }
  }

  /** Waits until every handler runs (each holding its transaction), then writes. */
  @Service
  static class Shipping {
    @Autowired DataSource dataSource;

    @PostboxListener(id = "pool-shipping", topic = "${test.orders}")
    void ship(String payload) throws Exception {
      ALL_RUNNING.countDown();
      if (!ALL_RUNNING.await(60, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the handlers did not all run at once");
      }
      try {
        new JdbcTemplate(dataSource).update("INSERT INTO pool_shipments VALUES (?)", payload);
      } catch (RuntimeException e) {
        FAILURES.add(e.getClass().getSimpleName() + ": " + e.getMessage());
        throw e;
      }
    }
  }

  @Autowired DataSource dataSource;

  @Test
  void aPoolAsLargeAsTheConcurrencyServesEveryHandlerAtOnce() throws Exception {
    List<Message> orders = new ArrayList<>();
    for (int i = 0; i < HANDLERS; i++) {
      orders.add(
          Message.builder(ORDERS, "order.placed")
              .key("k" + i)
              .jsonPayload("\"o" + i + "\"")
              .build());
    }
    try (KafkaRelayPublisher raw = KafkaRelayPublisher.builder(CTX.bootstrapServers()).build()) {
      raw.publish(orders);
    }
    JdbcTemplate jdbc = new JdbcTemplate(dataSource);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            jdbc.queryForObject("SELECT count(*) FROM pool_shipments", Long.class) == HANDLERS);
    assertThat(FAILURES).as("handlers that could not get a connection").isEmpty();
  }
}
