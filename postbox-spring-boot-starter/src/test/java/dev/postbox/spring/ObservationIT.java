package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.testkit.PostboxTestContext;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
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
import org.springframework.transaction.support.TransactionTemplate;

/**
 * With an {@link ObservationRegistry} in the application (what Spring Boot's actuator provides), on
 * the test kit's PostgreSQL and Kafka: the relay's batch and each delivery to an effectively-once
 * listener are observed, the failed first attempt with its error, and the listener's observation is
 * the current one while the handler runs (so the handler's own observed calls become its children).
 */
@SpringBootTest(classes = ObservationIT.App.class)
@DirtiesContext
class ObservationIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-observation");
  static final String ORDERS = CTX.topic("observation.orders");

  /** What each stopped observation was. */
  record Seen(String name, Map<String, String> keys, Optional<Throwable> error) {}

  static final List<Seen> SEEN = new CopyOnWriteArrayList<>();
  static final List<String> CURRENT_IN_HANDLER = new CopyOnWriteArrayList<>();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + ORDERS + "].concurrency", () -> "2");
    registry.add("postbox.topics[" + ORDERS + "].backoff.initial", () -> "10ms");
    registry.add("postbox.topics[" + ORDERS + "].backoff.max", () -> "50ms");
    registry.add("postbox.relay.poll-interval", () -> "200ms");
    registry.add("test.orders", () -> ORDERS);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Shipping.class)
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

    @Bean
    ObservationRegistry observationRegistry() {
      ObservationRegistry r = ObservationRegistry.create();
      r.observationConfig()
          .observationHandler(
              new ObservationHandler<Observation.Context>() {
                @Override
                public boolean supportsContext(Observation.Context context) {
                  return true;
                }

                @Override
                public void onStop(Observation.Context c) {
                  Map<String, String> keys =
                      c.getAllKeyValues().stream()
                          .collect(Collectors.toMap(KeyValue::getKey, KeyValue::getValue));
                  SEEN.add(new Seen(c.getName(), keys, Optional.ofNullable(c.getError())));
                }
              });
      return r;
    }
  }

  @Service
  static class Shipping {
    @Autowired JdbcTemplate jdbc;
    @Autowired ObservationRegistry registry;

    @PostboxListener(id = "obs-shipping", topic = "${test.orders}")
    void ship(String payload) {
      Observation current = registry.getCurrentObservation();
      CURRENT_IN_HANDLER.add(current == null ? "none" : current.getContext().getName());
      jdbc.update("INSERT INTO shipments (order_id) VALUES (?)", payload.replace("\"", ""));
      if (CURRENT_IN_HANDLER.size() == 1) {
        throw new IllegalStateException("the first attempt fails");
      }
    }
  }

  @Autowired TransactionalOutbox outbox;
  @Autowired PlatformTransactionManager transactionManager;
  @Autowired JdbcTemplate jdbc;

  private List<Seen> seen(String name) {
    return SEEN.stream().filter(s -> s.name().equals(name)).toList();
  }

  @Test
  void theRelayBatchAndEachDeliveryAreObserved() {
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
                    == 1
                && seen(PostboxObservations.LISTENER).size() == 2
                && !seen(PostboxObservations.RELAY_PUBLISH).isEmpty());

    Seen batch = seen(PostboxObservations.RELAY_PUBLISH).get(0);
    assertThat(batch.keys())
        .containsEntry("messaging.system", "kafka")
        .containsEntry("messaging.batch.message_count", "1")
        .containsEntry("postbox.relay.failed", "0");
    assertThat(batch.error()).isEmpty();

    List<Seen> deliveries = seen(PostboxObservations.LISTENER);
    for (Seen d : deliveries) {
      assertThat(d.keys())
          .containsEntry("postbox.listener.id", "obs-shipping")
          .containsEntry("messaging.destination.name", ORDERS)
          .containsEntry("messaging.system", "kafka")
          .containsEntry("postbox.message.type", "order.placed");
    }
    assertThat(deliveries.get(0).keys()).containsEntry("postbox.attempt", "1");
    assertThat(deliveries.get(0).error())
        .get()
        .extracting(Throwable::getMessage)
        .isEqualTo("the first attempt fails");
    assertThat(deliveries.get(1).keys()).containsEntry("postbox.attempt", "2");
    assertThat(deliveries.get(1).error()).isEmpty();
    assertThat(CURRENT_IN_HANDLER).containsOnly(PostboxObservations.LISTENER);
  }
}
