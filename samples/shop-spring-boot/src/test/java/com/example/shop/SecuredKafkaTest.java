package com.example.shop;

import com.example.shop.orders.OrderService;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaSaslSslListener;
import dev.postbox.testkit.PostboxTestContext;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The same exactly-once scenario on a broker that only accepts SASL_SSL (SCRAM-SHA-512 over TLS, a
 * private test kit broker), the shop configured through Spring Boot's {@code spring.kafka.*} only,
 * as for a managed cluster: nothing under {@code postbox.kafka.*}.
 */
@SpringBootTest
@DirtiesContext // stopped while the broker and the database still run
@Import(WarehouseTimingOutOnce.class)
class SecuredKafkaTest {

  static final String TOPIC = "shop.order-created.secured";
  private static final String USER = "shop";
  private static final String PASSWORD = "sh0p-Pw_3";
  static final PostboxTestContext CTX = PostboxTestContext.create("shop-secured");
  private static KafkaBroker broker; // guarded by SecuredKafkaTest.class

  /** The private broker, started (with the order topic) at the first call. */
  static synchronized KafkaSaslSslListener saslSsl() {
    if (broker == null) {
      broker = KafkaBroker.builder().saslSsl(USER, PASSWORD).build();
      broker.start();
      broker.createTopic(TOPIC, 3);
    }
    return broker.saslSsl().orElseThrow();
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", CTX::jdbcUrl);
    registry.add("spring.kafka.bootstrap-servers", () -> saslSsl().bootstrapServers());
    registry.add("spring.kafka.security.protocol", () -> "SASL_SSL");
    registry.add("spring.kafka.ssl.trust-store-location", () -> "file:" + saslSsl().trustStore());
    registry.add("spring.kafka.ssl.trust-store-password", () -> saslSsl().trustStorePassword());
    registry.add("spring.kafka.ssl.trust-store-type", () -> "PKCS12");
    registry.add("spring.kafka.properties.sasl.mechanism", () -> "SCRAM-SHA-512");
    registry.add(
        "spring.kafka.properties.sasl.jaas.config",
        () -> "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + USER
            + "\" password=\""
            + PASSWORD
            + "\";");
    registry.add("shop.order-topic", () -> TOPIC);
    registry.add("postbox.topics[" + TOPIC + "].guarantee", () -> "effectively-once");
    registry.add("postbox.topics[" + TOPIC + "].concurrency", () -> "4");
    registry.add("postbox.topics[" + TOPIC + "].max-retries", () -> "4");
    registry.add("postbox.topics[" + TOPIC + "].backoff.initial", () -> "50ms");
    registry.add("postbox.relay.poll-interval", () -> "200ms");
  }

  /** Stops the broker after the application's relay and listeners stopped (their lifecycle). */
  @TestConfiguration(proxyBeanMethods = false)
  static class BrokerStop {
    @Bean
    DisposableBean securedBrokerStop() {
      return () -> {
        synchronized (SecuredKafkaTest.class) {
          if (broker != null) {
            broker.close();
            broker = null;
          }
        }
        CTX.close();
      };
    }
  }

  @Autowired OrderService orders;

  @Test
  void eachOrderIsReservedOnceOverSaslSslConfiguredThroughSpringKafka() throws Exception {
    KafkaSaslSslListener listener = saslSsl();
    KafkaRelayPublisher.Builder copies =
        KafkaRelayPublisher.builder(listener.bootstrapServers());
    listener.clientProperties().forEach((name, value) -> {
      if (!name.equals("bootstrap.servers")) {
        copies.producerProperty(name, value);
      }
    });
    try (KafkaRelayPublisher raw = copies.build()) {
      DuplicatesAndACrash.run(orders, raw, new JdbcTemplate(CTX.dataSource()));
    }
  }
}
