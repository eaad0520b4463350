package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Message;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.spring.PostboxSpringBootTest;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link PostboxSpringBootTest}: the application names its topics as it would in production (no
 * test suffix, no {@code @DynamicPropertySource}); the annotation gives it a schema of its own and
 * the shared Kafka broker, creates the delivery table's topic before the listener starts, and an
 * outbox message goes through the relay to an effectively-once listener.
 */
@PostboxSpringBootTest(
    classes = PostboxSpringBootTestIT.App.class,
    properties = {
      "postbox.topics[slice.order.placed].guarantee=effectively-once",
      "postbox.topics[slice.order.placed].concurrency=2",
      "postbox.relay.poll-interval=200ms"
    })
class PostboxSpringBootTestIT {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Shipping.class)
  static class App {
    /** What Boot's DataSource auto-configuration does with spring.datasource.url. */
    @Bean
    DataSource dataSource(@Value("${spring.datasource.url}") String url) {
      HikariDataSource ds = new HikariDataSource();
      ds.setJdbcUrl(url);
      ds.setMaximumPoolSize(8);
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

    @PostboxListener(id = "slice-shipping", topic = "slice.order.placed")
    void ship(String payload) {
      jdbc.update("INSERT INTO shipments (order_id) VALUES (?)", payload.replace("\"", ""));
    }
  }

  @Autowired TransactionalOutbox outbox;
  @Autowired PlatformTransactionManager transactionManager;
  @Autowired JdbcTemplate jdbc;
  @Autowired PostboxTestContext kit;
  @Autowired PostboxProperties properties;

  @Test
  void theApplicationRunsOnTheTestKitWithItsTopicCreated() {
    assertThat(properties.getKafka().getBootstrapServers()).isEqualTo(kit.bootstrapServers());
    assertThat(jdbc.queryForObject("SELECT current_schema()", String.class))
        .isEqualTo(kit.schema());

    String orderId = "o-" + UUID.randomUUID();
    new TransactionTemplate(transactionManager)
        .executeWithoutResult(s ->
            outbox.write(
                Message.builder("slice.order.placed", "order.placed")
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
