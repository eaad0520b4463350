package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.jdbc.TransactionRequiredException;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
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
 * The starter with {@code postbox.transport: rabbitmq} on the test kit's PostgreSQL and RabbitMQ
 * node (no Kafka broker is started or named): the outbox joins {@code @Transactional}, the relay
 * publishes to RabbitMQ, an effectively-once {@link PostboxListener} consuming the shard queues
 * applies each message once even when it is delivered twice, a rollback leaves nothing, health
 * shows the RabbitMQ consumer, and at-most-once topics are sent to the topic's exchange after the
 * commit. Skipped with one line where there is no RabbitMQ (failing instead under {@code CI}).
 */
@SpringBootTest(classes = SpringStarterRabbitIT.App.class)
@DirtiesContext // closed (relay and consumers stopped) while the node and the database still run
class SpringStarterRabbitIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-rabbit");
  static final String RUN = UUID.randomUUID().toString().substring(0, 8);
  static final String ORDERS = "spring.rabbit.orders-" + RUN;
  static final String METRICS = "spring.rabbit.metrics-" + RUN;

  @BeforeAll
  static void rabbitOrSkip() {
    RabbitMqServer.sharedOrSkip(); // before the context: a skip is one line, not a failed context
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.transport", () -> "rabbitmq");
    registry.add("postbox.rabbitmq.uri", () -> RabbitMqServer.sharedOrSkip().uri());
    registry.add("postbox.rabbitmq.shards", () -> "2");
    registry.add("postbox.rabbitmq.shard-leases", () -> "true");
    registry.add("postbox.rabbitmq.age-reports", () -> "true");
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add(
        "postbox.topics[" + ORDERS + "].concurrency", () -> "2"); // the pool of 8 (PoolCheck)
    registry.add("postbox.topics[" + ORDERS + "].max-retries", () -> "5");
    registry.add("postbox.topics[" + ORDERS + "].backoff.initial", () -> "10ms");
    registry.add("postbox.topics[" + ORDERS + "].backoff.max", () -> "50ms");
    registry.add("postbox.topics[" + ORDERS + "].dead-letters", () -> "true");
    registry.add("postbox.topics[" + METRICS + "].guarantee", () -> "at-most-once");
    registry.add("postbox.relay.poll-interval", () -> "200ms");
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
      jdbc.execute(
          "CREATE TABLE IF NOT EXISTS applied (order_id text PRIMARY KEY, message_id uuid NOT NULL)");
      return ds;
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    TransactionTemplate transactionTemplate(PlatformTransactionManager tm) {
      return new TransactionTemplate(tm);
    }

    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  /** The order row and its event in one transaction; refused orders roll both back. */
  @Service
  static class OrderService {
    private final JdbcTemplate jdbc;
    private final PostboxPublisher publisher;

    OrderService(DataSource dataSource, PostboxPublisher publisher) {
      this.jdbc = new JdbcTemplate(dataSource);
      this.publisher = publisher;
    }

    @Transactional
    public Message place(String orderId, String customer, boolean refuse) {
      jdbc.update("INSERT INTO orders (id) VALUES (?)", orderId);
      Message m = event(orderId, customer);
      publisher.publish(m); // effectively-once in the table: the outbox
      if (refuse) {
        throw new IllegalStateException("credit limit");
      }
      return m;
    }
  }

  static Message event(String orderId, String customer) {
    return Message.builder(ORDERS, "order.created")
        .key(customer)
        .jsonPayload("\"" + orderId + "\"")
        .build();
  }

  /**
   * Applies each order on the inbox transaction; a second application of an order would violate the
   * primary key and be retried forever into the dead letters, so the test also counts those.
   */
  @Service
  static class OrderListener {
    @PostboxListener(topic = "${test.orders-topic}", name = "inventory")
    void apply(Delivery delivery, String payload, Connection connection) throws SQLException {
      try (PreparedStatement ps =
          connection.prepareStatement("INSERT INTO applied (order_id, message_id) VALUES (?, ?)")) {
        ps.setString(1, payload.replace("\"", ""));
        ps.setObject(2, delivery.message().id());
        ps.executeUpdate();
      }
    }
  }

  @Autowired OrderService orders;
  @Autowired PostboxPublisher publisher;
  @Autowired TransactionTemplate tx;
  @Autowired DataSource dataSource;
  @Autowired HealthIndicator postboxHealthIndicator;
  @Autowired MeterRegistry meterRegistry;

  private long count(String sql, Object... args) {
    return new JdbcTemplate(dataSource).queryForObject(sql, Long.class, args);
  }

  private static com.rabbitmq.client.Connection connect() throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(RabbitMqServer.sharedOrSkip().uri());
    return f.newConnection("spring-rabbit-it");
  }

  @Test
  void anOrderIsPublishedThroughRabbitMqAndAppliedOnceEvenWhenDeliveredTwice() throws Exception {
    String customer = "c-" + UUID.randomUUID();
    Message first = orders.place(customer + "-1", customer, false);
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE message_id = ?", first.id()))
        .isEqualTo(1);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> count("SELECT count(*) FROM applied WHERE message_id = ?", first.id()) == 1);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            count(
                    "SELECT count(*) FROM postbox_outbox WHERE message_id = ? AND published_at IS"
                        + " NOT NULL",
                    first.id())
                == 1);

    // it went through the broker: the listener's shard queues are there (2, as configured)
    try (com.rabbitmq.client.Connection c = connect();
        Channel ch = c.createChannel()) {
      for (int i = 0; i < 2; i++) {
        ch.queueDeclarePassive(RabbitTopology.queue("inventory", ORDERS, i));
      }
    }

    // the broker delivers the first event again (same id), then a later order of the same
    // customer (same key: same shard queue, behind the duplicate); once the later one is applied
    // the duplicate was handled before it, and the inbox suppressed it
    try (RabbitRelayPublisher raw =
        RabbitRelayPublisher.builder(RabbitMqServer.sharedOrSkip().uri()).build()) {
      assertThat(raw.publish(List.of(first)))
          .allMatch(
              o -> o instanceof dev.postbox.core.spi.RelayPublisher.PublishOutcome.Acknowledged);
    }
    Message later = orders.place(customer + "-2", customer, false);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> count("SELECT count(*) FROM applied WHERE message_id = ?", later.id()) == 1);
    assertThat(count("SELECT count(*) FROM applied WHERE order_id LIKE ?", customer + "-%"))
        .isEqualTo(2);
    // a second application would have failed on the primary key into the dead letters
    assertThat(count("SELECT count(*) FROM postbox_dead_letter")).isZero();
  }

  @Test
  void theRabbitConsumerReportsItsOldestUnfinishedDeliveriesToTheDatabase() {
    // postbox.rabbitmq.age-reports: one row per shard queue it consumes (2), for ./postbox lag
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            count(
                    "SELECT count(*) FROM postbox_consumer_age WHERE consumer = 'inventory'"
                        + " AND queue LIKE ?",
                    "%" + ORDERS + "%")
                == 2);
  }

  @Test
  void aRefusedOrderLeavesNoRowNoMessageAndNothingApplied() {
    String customer = "c-" + UUID.randomUUID();
    assertThatThrownBy(() -> orders.place(customer + "-big", customer, true))
        .hasMessage("credit limit");
    assertThat(count("SELECT count(*) FROM orders WHERE id = ?", customer + "-big")).isZero();
    assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", customer)).isZero();

    // a later order of the same customer is applied, the refused one never
    Message ok = orders.place(customer + "-ok", customer, false);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> count("SELECT count(*) FROM applied WHERE message_id = ?", ok.id()) == 1);
    assertThat(count("SELECT count(*) FROM applied WHERE order_id = ?", customer + "-big"))
        .isZero();
    assertThatThrownBy(() -> publisher.publish(event(customer + "-x", customer)))
        .isInstanceOf(TransactionRequiredException.class);
  }

  @Test
  void healthShowsTheRelaysLanesAndTheRabbitConsumerAndMetricsGoToTheRegistry() {
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
          assertThat(consumer)
              .containsEntry("connected", true)
              .containsEntry("shards", 2)
              .containsEntry("heldShards", "[0, 1]") // the only instance leases both
              .containsKeys("inFlight", "queued", "lagAge");
          assertThat(Duration.parse((String) consumer.get("lagAge")).isNegative()).isFalse();
          assertThat(health.getDetails()).containsKeys("outbox", "deadLetters", "parked");
        });
    assertThat(meterRegistry.find("postbox.outbox.pending").gauges()).isNotEmpty();
  }

  @Test
  void atMostOnceTopicsAreSentToTheExchangeAfterCommitAndNeverOnRollback() throws Exception {
    try (com.rabbitmq.client.Connection c = connect();
        Channel ch = c.createChannel()) {
      RabbitTopology.declareExchange(ch, METRICS);
      String queue = ch.queueDeclare().getQueue(); // exclusive, deleted with the connection
      ch.queueBind(queue, RabbitTopology.exchange(METRICS), "");

      String key = "k-" + UUID.randomUUID();
      Message rolledBack = Message.builder(METRICS, "page.view").key(key).jsonPayload("1").build();
      Message committed = Message.builder(METRICS, "page.view").key(key).jsonPayload("2").build();
      tx.executeWithoutResult(status -> {
        publisher.publish(rolledBack);
        status.setRollbackOnly();
      });
      tx.executeWithoutResult(status -> publisher.publish(committed));
      assertThat(count("SELECT count(*) FROM postbox_outbox WHERE msg_key = ?", key)).isZero();

      Set<UUID> seen = new HashSet<>();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> {
            GetResponse r = ch.basicGet(queue, true);
            if (r != null) {
              seen.add(
                  RabbitMessages.fromDelivery(METRICS, r.getEnvelope(), r.getProps(), r.getBody())
                      .id());
            }
            return seen.contains(committed.id());
          });
      assertThat(seen).doesNotContain(rolledBack.id());
      assertThat(ch.basicGet(queue, true)).isNull();
      assertThat(publisher.droppedDirect()).isZero();
    }
  }
}
