package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Service;

/**
 * A listener's consumer group is its explicit id, on the test kit's Kafka and PostgreSQL: a new
 * group starts at the end of its topic (what was on the topic before is not read), and the same
 * listener renamed (another class, another method, the same id) reads on where the first one
 * stopped, without reading the topic again.
 */
class ListenerNamesIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-listener-names");
  static final String ORDERS = CTX.topic("names.orders");
  static final String ID = "shipping-" + UUID.randomUUID();
  static final List<String> SEEN_BEFORE_RENAME = new CopyOnWriteArrayList<>();
  static final List<String> SEEN_AFTER_RENAME = new CopyOnWriteArrayList<>();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class Base {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      return CTX.dataSource();
    }
  }

  @Import({Base.class, Shipping.class})
  static class BeforeRename {}

  @Import({Base.class, RenamedShipping.class})
  static class AfterRename {}

  @Service
  static class Shipping {
    @PostboxListener(id = "${test.listener-id}", topic = "${test.orders}")
    void ship(String payload) {
      SEEN_BEFORE_RENAME.add(payload);
    }
  }

  @Service
  static class RenamedShipping {
    @PostboxListener(id = "${test.listener-id}", topic = "${test.orders}")
    void onOrderPlaced(String payload) {
      SEEN_AFTER_RENAME.add(payload);
    }
  }

  private static ConfigurableApplicationContext run(Class<?> app) {
    return new SpringApplicationBuilder(app)
        .web(WebApplicationType.NONE)
        .properties(
            "postbox.kafka.bootstrap-servers=" + CTX.bootstrapServers(),
            "postbox.relay.enabled=false",
            "postbox.topics[" + ORDERS + "].guarantee=effectively-once",
            "postbox.topics[" + ORDERS + "].concurrency=1",
            "test.orders=" + ORDERS,
            "test.listener-id=" + ID)
        .run();
  }

  private static String publish(String order) throws Exception {
    String payload = "\"" + order + "\"";
    try (KafkaRelayPublisher raw = KafkaRelayPublisher.builder(CTX.bootstrapServers()).build()) {
      raw.publish(
          List.of(Message.builder(ORDERS, "order.placed").key("k").jsonPayload(payload).build()));
    }
    return payload;
  }

  @Test
  void aNewGroupStartsAtTheEndAndTheRenamedListenerReadsOnWhereItStopped() throws Exception {
    publish("before-the-first-start");
    try (ConfigurableApplicationContext first = run(BeforeRename.class)) {
      String p1 = publish("first");
      await().atMost(Duration.ofSeconds(90)).until(() -> SEEN_BEFORE_RENAME.contains(p1));
      assertThat(SEEN_BEFORE_RENAME)
          .as("a new group reads from the end of the topic, not from its beginning")
          .containsExactly(p1);
    }
    String whileDown = publish("while-down");
    try (ConfigurableApplicationContext renamed = run(AfterRename.class)) {
      String p3 = publish("after-the-rename");
      await().atMost(Duration.ofSeconds(90)).until(() -> SEEN_AFTER_RENAME.contains(p3));
      assertThat(SEEN_AFTER_RENAME)
          .as("the renamed method, same id: the same group, from its committed offset")
          .containsExactly(whileDown, p3);
    }
  }
}
