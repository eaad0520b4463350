package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaSaslSslListener;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Postbox's Kafka clients connect the way the application's {@code spring.kafka.*} says, on a test
 * kit broker that only accepts SASL_SSL (SCRAM over TLS): with nothing under {@code
 * postbox.kafka.*} but an extra client property, the relay publishes, the admin look-ups (topic,
 * retention, the new group's start) answer and an effectively-once listener applies the message.
 */
class KafkaSettingsFromBootIT {

  private static final String USER = "postbox-boot";
  private static final String PASSWORD = "b00t-Pw_7";
  static final PostboxTestContext CTX = PostboxTestContext.create("spring-kafka-settings");
  static final String TOPIC = "secure.orders";
  static final Set<String> APPLIED = ConcurrentHashMap.newKeySet();
  private static KafkaBroker broker;
  private static KafkaSaslSslListener listener;

  @BeforeAll
  static void startBroker() {
    broker = KafkaBroker.builder().saslSsl(USER, PASSWORD).build();
    broker.start();
    listener = broker.saslSsl().orElseThrow();
    broker.createTopic(TOPIC, 1);
  }

  @AfterAll
  static void stopBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(SecureListener.class)
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      return CTX.newDataSource(12);
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }
  }

  @Service
  static class SecureListener {
    @PostboxListener(id = "secure-shipping", topic = TOPIC)
    void ship(String payload) {
      APPLIED.add(payload);
    }
  }

  @Test
  void theRelayTheListenerAndTheAdminLookUpsUseSpringKafkaSettings() {
    String jaas =
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + USER
            + "\" password=\""
            + PASSWORD
            + "\";";
    try (ConfigurableApplicationContext app =
        new SpringApplicationBuilder(App.class)
            .web(WebApplicationType.NONE)
            .properties(
                Map.of(
                    "spring.kafka.bootstrap-servers",
                    listener.bootstrapServers(),
                    "spring.kafka.security.protocol",
                    "SASL_SSL",
                    "spring.kafka.ssl.trust-store-location",
                    "file:" + listener.trustStore(),
                    "spring.kafka.ssl.trust-store-password",
                    listener.trustStorePassword(),
                    "spring.kafka.ssl.trust-store-type",
                    "PKCS12",
                    "spring.kafka.properties.sasl.mechanism",
                    "SCRAM-SHA-512",
                    "spring.kafka.properties.sasl.jaas.config",
                    jaas,
                    "postbox.kafka.properties.client.rack",
                    "rack-a",
                    "postbox.topics[" + TOPIC + "].guarantee",
                    "effectively-once",
                    "postbox.topics[" + TOPIC + "].concurrency",
                    "2"))
            .run()) {
      PostboxProperties properties = app.getBean(PostboxProperties.class);
      assertThat(properties.getKafka().getBootstrapServers())
          .isEqualTo(listener.bootstrapServers());
      assertThat(properties.getKafka().clientProperties())
          .containsEntry("security.protocol", "SASL_SSL")
          .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
          .containsEntry(
              "ssl.truststore.location", listener.trustStore().toAbsolutePath().toString())
          .containsEntry("ssl.truststore.type", "PKCS12")
          .containsEntry("client.rack", "rack-a");

      String payload = "\"secure-order-1\"";
      new TransactionTemplate(app.getBean(PlatformTransactionManager.class))
          .executeWithoutResult(status ->
              app.getBean(TransactionalOutbox.class)
                  .write(
                      Message.builder(TOPIC, "order.placed")
                          .key("k")
                          .jsonPayload(payload)
                          .build()));
      await().atMost(Duration.ofSeconds(120)).until(() -> APPLIED.contains(payload));
    }
  }
}
