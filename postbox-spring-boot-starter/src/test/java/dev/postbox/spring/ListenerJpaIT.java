package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.spring.jpa.Shipment;
import dev.postbox.spring.jpa.ShipmentRepository;
import dev.postbox.testkit.PostboxTestContext;
import jakarta.persistence.EntityManagerFactory;
import java.time.Duration;
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
import org.springframework.data.jpa.repository.config.EnableJpaRepositories;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.orm.jpa.vendor.HibernateJpaVendorAdapter;
import org.springframework.stereotype.Service;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;

/**
 * An effectively-once listener that saves through a Spring Data JPA repository (Hibernate, {@code
 * JpaTransactionManager}) on the test kit's PostgreSQL and Kafka: each message delivered twice, the
 * first attempt failing after the save. Exactly one saved entity per message: the repository's
 * write joins the JPA transaction that holds the dedupe record (on its JDBC connection).
 */
@SpringBootTest(classes = ListenerJpaIT.App.class)
@DirtiesContext
class ListenerJpaIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-listener-jpa");
  static final String ORDERS = CTX.topic("listener-jpa.orders");
  static final Set<String> FAILED_ONCE = ConcurrentHashMap.newKeySet();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + ORDERS + "].concurrency", () -> "4");
    registry.add("postbox.topics[" + ORDERS + "].max-retries", () -> "5");
    registry.add("postbox.topics[" + ORDERS + "].backoff.initial", () -> "10ms");
    registry.add("postbox.topics[" + ORDERS + "].backoff.max", () -> "50ms");
    registry.add("postbox.relay.enabled", () -> "false");
    registry.add("test.orders", () -> ORDERS);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @EnableTransactionManagement
  @EnableJpaRepositories(basePackageClasses = ShipmentRepository.class)
  @Import(JpaListener.class)
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      DataSource ds = CTX.newDataSource(12);
      new JdbcTemplate(ds)
          .execute(
              "CREATE TABLE IF NOT EXISTS jpa_shipments (id bigserial PRIMARY KEY, order_id text"
                  + " NOT NULL)");
      return ds;
    }

    @Bean
    LocalContainerEntityManagerFactoryBean entityManagerFactory(DataSource dataSource) {
      LocalContainerEntityManagerFactoryBean f = new LocalContainerEntityManagerFactoryBean();
      f.setDataSource(dataSource);
      f.setPackagesToScan(Shipment.class.getPackageName());
      f.setJpaVendorAdapter(new HibernateJpaVendorAdapter());
      return f;
    }

    @Bean
    PlatformTransactionManager transactionManager(EntityManagerFactory emf) {
      return new JpaTransactionManager(emf);
    }
  }

  @Service
  static class JpaListener {
    @Autowired ShipmentRepository shipments;

    @PostboxListener(id = "shipping-jpa", topic = "${test.orders}")
    void ship(String payload) {
      String orderId = payload.replace("\"", "");
      shipments.save(new Shipment(orderId));
      if (FAILED_ONCE.add(orderId)) {
        throw new IllegalStateException("the first attempt fails after its save");
      }
    }
  }

  @Autowired ShipmentRepository shipments;

  @Test
  void aRepositorySaveCommitsWithTheDedupeRecordOncePerMessage() throws Exception {
    String orderId = DeliveredTwice.publish(CTX.bootstrapServers(), ORDERS);
    // key order: once the later message is saved, both copies of the first were handled
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> shipments.countByOrderId(DeliveredTwice.later(orderId)) >= 1);
    assertThat(shipments.countByOrderId(orderId))
        .as("entities saved for one message delivered twice, failing once")
        .isEqualTo(1);
  }
}
