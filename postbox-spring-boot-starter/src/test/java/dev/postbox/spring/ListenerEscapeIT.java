package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.stereotype.Service;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * An application whose effectively-once listeners write outside their transaction, with {@code
 * postbox.consumers.escaped-writes: fail}, on the test kit's PostgreSQL and Kafka: a listener that
 * calls a {@code @Transactional(propagation = REQUIRES_NEW)} service and one that writes with a
 * {@code JdbcTemplate} on a second {@code DataSource} each fail their message permanently (one
 * attempt, into the dead letters, naming the listener), so the escaped write is made once and not
 * once per retry; a listener whose service joins (REQUIRED) applies its message.
 */
@SpringBootTest(classes = ListenerEscapeIT.App.class)
@DirtiesContext
class ListenerEscapeIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-listener-escape");
  static final String REQUIRES_NEW = CTX.topic("listener-escape.requires-new");
  static final String OTHER_DS = CTX.topic("listener-escape.other-ds");
  static final String JOINS = CTX.topic("listener-escape.joins");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    registry.add("postbox.consumers.escaped-writes", () -> "fail");
    for (String topic : List.of(REQUIRES_NEW, OTHER_DS, JOINS)) {
      registry.add("postbox.topics[" + topic + "].guarantee", () -> "effectively-once");
      registry.add("postbox.topics[" + topic + "].concurrency", () -> "2");
      registry.add("postbox.topics[" + topic + "].max-retries", () -> "5");
      registry.add("postbox.topics[" + topic + "].backoff.initial", () -> "10ms");
      registry.add("postbox.topics[" + topic + "].backoff.max", () -> "50ms");
      registry.add("postbox.topics[" + topic + "].dead-letters", () -> "true");
    }
    registry.add("postbox.relay.enabled", () -> "false");
    registry.add("test.requires-new", () -> REQUIRES_NEW);
    registry.add("test.other-ds", () -> OTHER_DS);
    registry.add("test.joins", () -> JOINS);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @EnableTransactionManagement
  @Import({AuditService.class, EscapingListeners.class})
  static class App {
    @Bean(destroyMethod = "")
    @Primary
    DataSource dataSource() {
      DataSource ds = CTX.newDataSource(12);
      new JdbcTemplate(ds)
          .execute("CREATE TABLE IF NOT EXISTS effects (label text NOT NULL, order_id text)");
      return ds;
    }

    /** A second pool on the same database: its writes commit on their own connections. */
    @Bean(destroyMethod = "")
    DataSource reportingDataSource() {
      return CTX.newDataSource(2);
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    @Primary
    JdbcTemplate jdbcTemplate(DataSource dataSource) {
      return new JdbcTemplate(dataSource);
    }
  }

  @Service
  static class AuditService {
    @Autowired JdbcTemplate jdbc;

    @Transactional(propagation = Propagation.REQUIRES_NEW)
    public void auditOnItsOwn(String orderId) {
      jdbc.update("INSERT INTO effects (label, order_id) VALUES ('audit', ?)", orderId);
    }

    @Transactional
    public void auditJoining(String orderId) {
      jdbc.update("INSERT INTO effects (label, order_id) VALUES ('joined', ?)", orderId);
    }
  }

  @Service
  static class EscapingListeners {
    @Autowired JdbcTemplate jdbc;
    @Autowired AuditService audit;
    final JdbcTemplate reporting;

    EscapingListeners(@Qualifier("reportingDataSource") DataSource reporting) {
      this.reporting = new JdbcTemplate(reporting);
    }

    @PostboxListener(id = "escape-requires-new", topic = "${test.requires-new}")
    void requiresNew(String json) {
      String payload = json.replace("\"", "");
      jdbc.update("INSERT INTO effects (label, order_id) VALUES ('inside', ?)", payload);
      audit.auditOnItsOwn(payload);
    }

    @PostboxListener(id = "escape-other-ds", topic = "${test.other-ds}")
    void otherDataSource(String json) {
      String payload = json.replace("\"", "");
      jdbc.update("INSERT INTO effects (label, order_id) VALUES ('inside', ?)", payload);
      reporting.update("INSERT INTO effects (label, order_id) VALUES ('report', ?)", payload);
    }

    @PostboxListener(id = "escape-joins", topic = "${test.joins}")
    void joins(String json) {
      String payload = json.replace("\"", "");
      audit.auditJoining(payload);
    }
  }

  @Autowired JdbcTemplate jdbc;

  private static String publish(String topic) throws Exception {
    String orderId = "o-" + UUID.randomUUID();
    try (KafkaRelayPublisher raw = KafkaRelayPublisher.builder(CTX.bootstrapServers()).build()) {
      raw.publish(
          List.of(
              Message.builder(topic, "order.placed")
                  .key(orderId)
                  .jsonPayload("\"" + orderId + "\"")
                  .build()));
    }
    return orderId;
  }

  private long effects(String label, String orderId) {
    return jdbc.queryForObject(
        "SELECT count(*) FROM effects WHERE label = ? AND order_id = ?",
        Long.class,
        label,
        orderId);
  }

  private Map<String, Object> deadLetter(String consumer) {
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() ->
            jdbc.queryForObject(
                    "SELECT count(*) FROM postbox_dead_letter WHERE consumer = ?",
                    Long.class,
                    consumer)
                > 0);
    return jdbc.queryForMap(
        "SELECT classification, error_class, error_message, attempts FROM postbox_dead_letter"
            + " WHERE consumer = ?",
        consumer);
  }

  @Test
  void aRequiresNewWriteFailsTheMessageOnceNamingTheListener() throws Exception {
    String orderId = publish(REQUIRES_NEW);
    Map<String, Object> letter = deadLetter("escape-requires-new");
    assertThat(letter.get("classification")).isEqualTo("PERMANENT");
    assertThat(letter.get("attempts")).as("not retried").isEqualTo(1);
    assertThat(letter.get("error_class"))
        .isEqualTo(ListenerTransactionEscapedException.class.getName());
    assertThat((String) letter.get("error_message"))
        .contains("listener 'escape-requires-new'", "REQUIRES_NEW");
    assertThat(effects("inside", orderId)).as("rolled back with the attempt").isZero();
    assertThat(effects("audit", orderId)).as("committed on its own, once").isEqualTo(1);
  }

  @Test
  void aWriteThroughAnotherDataSourceFailsTheMessageOnce() throws Exception {
    String orderId = publish(OTHER_DS);
    Map<String, Object> letter = deadLetter("escape-other-ds");
    assertThat(letter.get("attempts")).as("not retried").isEqualTo(1);
    assertThat((String) letter.get("error_message"))
        .contains("listener 'escape-other-ds'", "another DataSource");
    assertThat(effects("inside", orderId)).isZero();
    assertThat(effects("report", orderId)).isEqualTo(1);
  }

  @Test
  void aServiceThatJoinsIsApplied() throws Exception {
    String orderId = publish(JOINS);
    await().atMost(Duration.ofSeconds(90)).until(() -> effects("joined", orderId) == 1);
    assertThat(
            jdbc.queryForObject(
                "SELECT count(*) FROM postbox_dead_letter WHERE consumer = 'escape-joins'",
                Long.class))
        .isZero();
  }
}
