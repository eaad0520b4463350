package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;

/**
 * Effectively-once listeners that write the way a Spring application does, with {@code
 * JdbcTemplate}, through a {@code @Transactional} service, and to the outbox, on the test kit's
 * PostgreSQL and Kafka: every message is delivered twice, and each handler throws after its writes
 * on its first attempt (an exception between the effect and the commit). Exactly one effect per
 * message, because the handler's writes are in the transaction of its dedupe record.
 */
@SpringBootTest(classes = ListenerTransactionIT.App.class)
@DirtiesContext
class ListenerTransactionIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-listener-tx");
  static final String JDBC = CTX.topic("listener-tx.jdbc");
  static final String NESTED = CTX.topic("listener-tx.nested");
  static final String FOLLOW_UP = CTX.topic("listener-tx.follow-up");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    for (String topic : List.of(JDBC, NESTED)) {
      registry.add("postbox.topics[" + topic + "].guarantee", () -> "effectively-once");
      registry.add("postbox.topics[" + topic + "].concurrency", () -> "4");
      registry.add("postbox.topics[" + topic + "].max-retries", () -> "5");
      registry.add("postbox.topics[" + topic + "].backoff.initial", () -> "10ms");
      registry.add("postbox.topics[" + topic + "].backoff.max", () -> "50ms");
    }
    registry.add("postbox.relay.poll-interval", () -> "200ms");
    registry.add("test.jdbc", () -> JDBC);
    registry.add("test.nested", () -> NESTED);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @EnableTransactionManagement
  @Import({JdbcListener.class, NestedListener.class, ShipmentService.class})
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      DataSource ds = CTX.newDataSource(16);
      new JdbcTemplate(ds)
          .execute(
              "CREATE TABLE IF NOT EXISTS shipments (id bigserial PRIMARY KEY, order_id text NOT"
                  + " NULL, via text NOT NULL)");
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

  static final Set<String> FAILED_ONCE = ConcurrentHashMap.newKeySet();

  /** The order id of a payload: the id as a JSON string. */
  static String orderId(String payload) {
    return payload.replace("\"", "");
  }

  /** Fails the first attempt of each order, after its writes. */
  static void failFirstAttempt(String orderId) {
    if (FAILED_ONCE.add(orderId)) {
      throw new IllegalStateException("the first attempt fails after its effect");
    }
  }

  /** Ships with JdbcTemplate, and announces the shipment through the outbox. */
  @Service
  static class JdbcListener {
    @Autowired JdbcTemplate jdbc;
    @Autowired TransactionalOutbox outbox;

    @PostboxListener(id = "shipping-jdbc", topic = "${test.jdbc}")
    void ship(String payload) {
      String orderId = orderId(payload);
      jdbc.update("INSERT INTO shipments (order_id, via) VALUES (?, 'jdbc')", orderId);
      outbox.write(
          Message.builder(FOLLOW_UP, "shipment.created")
              .key(orderId)
              .jsonPayload("\"" + orderId + "\"")
              .build());
      failFirstAttempt(orderId);
    }
  }

  /** Ships through a @Transactional service (REQUIRED: it joins the listener's transaction). */
  @Service
  static class NestedListener {
    @Autowired ShipmentService shipments;

    @PostboxListener(id = "shipping-nested", topic = "${test.nested}")
    void ship(String payload) {
      String orderId = orderId(payload);
      shipments.ship(orderId, "nested");
      failFirstAttempt(orderId);
    }
  }

  @Service
  static class ShipmentService {
    @Autowired JdbcTemplate jdbc;

    @Transactional
    public void ship(String orderId, String via) {
      jdbc.update("INSERT INTO shipments (order_id, via) VALUES (?, ?)", orderId, via);
    }
  }

  @Autowired JdbcTemplate jdbc;

  private long shipments(String orderId) {
    return jdbc.queryForObject(
        "SELECT count(*) FROM shipments WHERE order_id = ?", Long.class, orderId);
  }

  private String deliverTwiceAndAwait(String topic) throws Exception {
    String orderId = DeliveredTwice.publish(CTX.bootstrapServers(), topic);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> shipments(DeliveredTwice.later(orderId)) >= 1);
    return orderId;
  }

  @Test
  void aJdbcTemplateWriteCommitsWithTheDedupeRecordOncePerMessage() throws Exception {
    String orderId = deliverTwiceAndAwait(JDBC);
    assertThat(shipments(orderId))
        .as("shipments of one message delivered twice, failing once")
        .isEqualTo(1);
    // the outbox write inside the listener joined the same transaction: one announcement
    assertThat(
            jdbc.queryForObject(
                "SELECT count(*) FROM postbox_outbox WHERE topic = ? AND msg_key = ?",
                Long.class,
                FOLLOW_UP,
                orderId))
        .isEqualTo(1);
  }

  @Test
  void aNestedTransactionalServiceJoinsTheListenersTransaction() throws Exception {
    String orderId = deliverTwiceAndAwait(NESTED);
    assertThat(shipments(orderId))
        .as("shipments of one message delivered twice, failing once")
        .isEqualTo(1);
  }
}
