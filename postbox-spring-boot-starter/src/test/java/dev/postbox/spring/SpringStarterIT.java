package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.PostboxTestContext;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
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
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter in a Spring Boot application on the test kit's PostgreSQL and Kafka: the outbox joins
 * {@code @Transactional} and {@code TransactionTemplate}, a rollback writes nothing, the relay
 * publishes, and an effectively-once {@link PostboxListener} applies each message once.
 */
@SpringBootTest(classes = SpringStarterIT.App.class)
@DirtiesContext // closed (relay and consumers stopped) while the test kit's broker and database
// still run
class SpringStarterIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-starter");
  static final String ORDERS = CTX.topic("spring.orders");
  static final String AUDIT = CTX.topic("spring.audit");
  static final String METRICS = CTX.topic("spring.metrics");
  static final java.util.Set<UUID> AUDITED = java.util.concurrent.ConcurrentHashMap.newKeySet();
  static final io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter SPANS =
      io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter.create();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + ORDERS + "].max-retries", () -> "5");
    // the test kit's pool of 8: 2 handlers, the relay's 4, 2 for the test (PoolCheck)
    registry.add("postbox.topics[" + ORDERS + "].concurrency", () -> "2");
    registry.add("postbox.topics[" + ORDERS + "].backoff.initial", () -> "10ms");
    registry.add("postbox.topics[" + ORDERS + "].backoff.max", () -> "50ms");
    registry.add("postbox.relay.poll-interval", () -> "200ms");
    registry.add("postbox.topics[" + METRICS + "].guarantee", () -> "at-most-once");
    registry.add("test.orders-topic", () -> ORDERS);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @EnableTransactionManagement
  @Import({OrderService.class, OrderListener.class})
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      DataSource ds = CTX.dataSource();
      JdbcTemplate jdbc = new JdbcTemplate(ds);
      jdbc.execute("CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)");
      jdbc.execute("CREATE TABLE IF NOT EXISTS applied (order_id text PRIMARY KEY)");
      return ds;
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    /** A consumer with its own subscription (at-least-once, the library's defaults). */
    @Bean
    PostboxConsumer audit() {
      return new PostboxConsumer(
          Subscription.builder("audit").topics(AUDIT).build(), d -> AUDITED.add(d.message().id()));
    }

    /** The application's OpenTelemetry: the consumers' processing spans must come here. */
    @Bean
    io.opentelemetry.api.OpenTelemetry openTelemetry() {
      return io.opentelemetry.sdk.OpenTelemetrySdk.builder()
          .setTracerProvider(
              io.opentelemetry.sdk.trace.SdkTracerProvider.builder()
                  .addSpanProcessor(
                      io.opentelemetry.sdk.trace.export.SimpleSpanProcessor.create(SPANS))
                  .build())
          .build();
    }

    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }

    @Bean
    TransactionTemplate transactionTemplate(PlatformTransactionManager tm) {
      return new TransactionTemplate(tm);
    }
  }

  /** A business service: the order row and its event in one transaction. */
  @Service
  static class OrderService {
    private final JdbcTemplate jdbc;
    private final TransactionalOutbox outbox;

    OrderService(DataSource dataSource, TransactionalOutbox outbox) {
      this.jdbc = new JdbcTemplate(dataSource);
      this.outbox = outbox;
    }

    @Transactional
    public Message place(String orderId, boolean fail) {
      jdbc.update("INSERT INTO orders (id) VALUES (?)", orderId);
      Message m = event(orderId);
      outbox.write(m);
      if (fail) {
        throw new IllegalStateException("payment refused");
      }
      return m;
    }
  }

  static Message event(String orderId) {
    return Message.builder(ORDERS, "order.created")
        .key(orderId)
        .jsonPayload("\"" + orderId + "\"")
        .build();
  }

  /** Applies each order once, in the inbox transaction; fails its first attempt of each order. */
  @Service
  static class OrderListener {
    final java.util.Set<String> failedOnce = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @PostboxListener(topic = "${test.orders-topic}", name = "inventory")
    void apply(Delivery delivery, String payload, Connection connection) throws SQLException {
      String orderId = payload.replace("\"", "");
      try (PreparedStatement ps =
          connection.prepareStatement("INSERT INTO applied (order_id) VALUES (?)")) {
        ps.setString(1, orderId);
        ps.executeUpdate();
      }
      if (failedOnce.add(orderId)) {
        throw new IllegalStateException("first attempt fails after its effect (rolled back)");
      }
    }
  }

  @Autowired OrderService orders;
  @Autowired TransactionalOutbox outbox;
  @Autowired TransactionTemplate tx;
  @Autowired DataSource dataSource;
  @Autowired HealthIndicator postboxHealthIndicator;
  @Autowired MeterRegistry meterRegistry;
  @Autowired PostboxPublisher publisher;
  @Autowired io.opentelemetry.api.OpenTelemetry openTelemetry;

  @Test
  void theApplicationsOpenTelemetryGetsTheListenersSpanInTheTraceOfTheWritingRequest() {
    io.opentelemetry.api.trace.Span request =
        openTelemetry.getTracer("test").spanBuilder("POST /orders").startSpan();
    String orderId = "traced-" + UUID.randomUUID();
    try (io.opentelemetry.context.Scope scope = request.makeCurrent()) {
      orders.place(orderId, false); // the outbox row carries the request's trace context
    } finally {
      request.end();
    }
    String traceId = request.getSpanContext().getTraceId();
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            SPANS.getFinishedSpanItems().stream()
                .anyMatch(span ->
                    span.getTraceId().equals(traceId)
                        && span.getKind() == io.opentelemetry.api.trace.SpanKind.CONSUMER
                        && span.getName().equals("process " + ORDERS)));
  }

  private long count(String sql, Object... args) {
    return new JdbcTemplate(dataSource).queryForObject(sql, Long.class, args);
  }

  @Test
  void transactionalServiceWritesTheRowAndTheMessageAndTheListenerAppliesItOnce() throws Exception {
    String orderId = "o-" + UUID.randomUUID();
    Message m = orders.place(orderId, false);

    assertThat(count("SELECT count(*) FROM orders WHERE id = ?", orderId)).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE message_id = ?", m.id()))
        .isEqualTo(1);

    // the relay publishes it, and the listener applies it (after one failed, rolled-back attempt)
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> count("SELECT count(*) FROM applied WHERE order_id = ?", orderId) == 1);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            count(
                    "SELECT count(*) FROM postbox_outbox WHERE message_id = ? AND published_at"
                        + " IS NOT NULL",
                    m.id())
                == 1);

    // the same message again on the topic, then a later one of the same key: once the later one
    // is applied, the duplicate (before it in key order) was handled, and suppressed
    try (KafkaRelayPublisher raw = KafkaRelayPublisher.builder(CTX.bootstrapServers()).build()) {
      raw.publish(List.of(m));
    }
    String next = orderId + "-next";
    Message later =
        Message.builder(ORDERS, "order.created")
            .key(orderId)
            .jsonPayload("\"" + next + "\"")
            .build();
    tx.executeWithoutResult(status -> outbox.write(later));
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> count("SELECT count(*) FROM applied WHERE order_id = ?", next) == 1);
    assertThat(count("SELECT count(*) FROM applied WHERE order_id = ?", orderId)).isEqualTo(1);
  }

  @Test
  void aRollbackWritesNeitherTheRowNorTheMessage() {
    String orderId = "o-" + UUID.randomUUID();
    assertThatThrownBy(() -> orders.place(orderId, true)).hasMessage("payment refused");

    assertThat(count("SELECT count(*) FROM orders WHERE id = ?", orderId)).isZero();
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", orderId)).isZero();
  }

  @Test
  void outsideATransactionTheOutboxRefusesAndWritesNothing() {
    String orderId = "o-" + UUID.randomUUID();
    assertThatThrownBy(() -> outbox.write(event(orderId)))
        .isInstanceOf(TransactionRequiredException.class)
        .hasMessageContaining("@Transactional");
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", orderId)).isZero();
  }

  @Test
  void healthShowsTheRelaysLanesAndTheListenersPollLoopAndMetricsGoToTheRegistry() {
    await()
        .atMost(Duration.ofSeconds(90))
        .untilAsserted(() -> {
          Health health = postboxHealthIndicator.health(true);
          assertThat(health.getStatus()).isEqualTo(Status.UP);
          @SuppressWarnings("unchecked")
          Map<String, Object> relay = (Map<String, Object>) health.getDetails().get("relay");
          assertThat((Integer) relay.get("lanesHeld")).isPositive();
          @SuppressWarnings("unchecked")
          Map<String, Object> consumer =
              (Map<String, Object>) health.getDetails().get("consumer inventory");
          assertThat(consumer).containsEntry("pollLoopAlive", true);
          // lag as age from the group's committed offsets, and the tables' backlogs
          assertThat(consumer).containsKeys("lagAge", "offsetLag");
          assertThat(health.getDetails().get("outbox"))
              .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
              .containsKeys("pending", "oldestPendingAge", "stuck", "holdingKeys", "heldRows")
              .containsEntry("stuck", false)
              .containsEntry("holdingKeys", 0L);
          assertThat(health.getDetails().get("deadLetters"))
              .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
              .containsEntry("pending", 0L);
          assertThat(health.getDetails()).containsKey("parked");
        });
    assertThat(meterRegistry.find("postbox.relay.published").meters()).isNotEmpty();
    assertThat(meterRegistry.find("postbox.outbox.pending").gauges()).isNotEmpty();
  }

  @Test
  void aPostboxConsumerBeanReceivesWhatATransactionTemplateWrote() {
    Message m = Message.builder(AUDIT, "audit.entry").key("k").jsonPayload("{}").build();
    tx.executeWithoutResult(status -> outbox.write(m));
    await().atMost(Duration.ofSeconds(90)).until(() -> AUDITED.contains(m.id()));
  }

  @Test
  void thePublisherWritesOutboxTopicsInTheTransactionAndSendsAtMostOnceTopicsAfterCommit() {
    String key = "k-" + UUID.randomUUID();
    Message order =
        Message.builder(ORDERS, "order.created").key(key).jsonPayload("\"" + key + "\"").build();
    Message rolledBack = Message.builder(METRICS, "page.view").key(key).jsonPayload("1").build();
    java.util.Set<UUID> committed = java.util.concurrent.ConcurrentHashMap.newKeySet();

    // a rollback: neither the outbox row nor the direct message
    tx.executeWithoutResult(status -> {
      publisher.publishAll(List.of(order, rolledBack));
      status.setRollbackOnly();
    });
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE message_id = ?", order.id()))
        .isZero();
    // commits: the direct ones are sent (at most once: the first may be dropped while the
    // producer has no metadata yet), never written to the outbox
    Runnable publishOne =
        () -> {
          Message m = Message.builder(METRICS, "page.view").key(key).jsonPayload("2").build();
          tx.executeWithoutResult(status -> publisher.publish(m));
          committed.add(m.id());
        };
    publishOne.run();
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", key)).isZero();
    assertThatThrownBy(() -> publisher.publish(order))
        .isInstanceOf(TransactionRequiredException.class);

    // on the topic: the committed one, and not the rolled-back one sent before it
    java.util.Properties p = new java.util.Properties();
    p.put("bootstrap.servers", CTX.bootstrapServers());
    p.put("key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class);
    p.put("value.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class);
    java.util.Set<UUID> seen = new java.util.HashSet<>();
    try (var consumer = new org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]>(p)) {
      var partition = new org.apache.kafka.common.TopicPartition(METRICS, 0);
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      await()
          .atMost(Duration.ofSeconds(90))
          .until(() -> {
            consumer
                .poll(Duration.ofMillis(500))
                .forEach(r -> seen.add(dev.postbox.kafka.KafkaRecords.fromRecord(r).id()));
            if (seen.stream().noneMatch(committed::contains)) {
              publishOne.run();
              return false;
            }
            return true;
          });
    }
    assertThat(seen).doesNotContain(rolledBack.id());
  }
}
