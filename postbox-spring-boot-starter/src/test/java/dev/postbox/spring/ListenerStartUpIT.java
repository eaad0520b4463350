package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.postbox.core.consumer.Delivery;
import dev.postbox.testkit.PostboxTestContext;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * What the starter refuses at start-up rather than let a listener lose its guarantee later, on the
 * test kit's PostgreSQL and Kafka: a listener without an id, a pool too small for the listeners'
 * concurrency, a transaction manager of another DataSource, a topic that does not exist.
 */
class ListenerStartUpIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-listener-start");
  static final String ORDERS = CTX.topic("start.orders");

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class Base {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      return CTX.dataSource(); // HikariCP, at most 8 connections
    }
  }

  @Service
  static class Shipping {
    @PostboxListener(id = "start-shipping", topic = "${test.orders}")
    void ship(Delivery d) {}
  }

  @Service
  static class WithoutId {
    @PostboxListener(topic = "${test.orders}")
    void ship(Delivery d) {}
  }

  @Import({Base.class, Shipping.class})
  static class App {}

  /** Two listeners with one id: one consumer group split between them, by accident. */
  @Service
  static class SameIdAgain {
    @PostboxListener(id = "start-shipping", topic = "${test.orders}")
    void shipAgain(Delivery d) {}
  }

  @Import({Base.class, Shipping.class, SameIdAgain.class})
  static class AppWithTwoListenersOfOneId {}

  @Import({Base.class, WithoutId.class})
  static class AppWithoutId {}

  @Import({Base.class, Shipping.class})
  static class AppWithAnotherDataSourcesTransactions {
    @Bean
    PlatformTransactionManager transactionManager() {
      return new DataSourceTransactionManager(CTX.newDataSource(2));
    }
  }

  private static PostboxConfigurationException refusal(Class<?> app, String topic, String... more) {
    String[] properties = new String[more.length + 5];
    properties[0] = "postbox.kafka.bootstrap-servers=" + CTX.bootstrapServers();
    properties[1] = "postbox.relay.enabled=false";
    properties[2] = "postbox.topics[" + topic + "].guarantee=effectively-once";
    properties[3] = "test.orders=" + topic;
    properties[4] = "postbox.topics[" + topic + "].concurrency=2";
    System.arraycopy(more, 0, properties, 5, more.length);
    Throwable failure =
        catchThrowable(() ->
            new SpringApplicationBuilder(app)
                .web(WebApplicationType.NONE)
                .properties(properties)
                .run()
                .close());
    Throwable root = failure;
    while (root != null && !(root instanceof PostboxConfigurationException)) {
      root = root.getCause();
    }
    assertThat(root).as("%s", failure).isInstanceOf(PostboxConfigurationException.class);
    return (PostboxConfigurationException) root;
  }

  @Test
  void aListenerWithoutAnIdIsRefusedByName() {
    assertThat(refusal(AppWithoutId.class, ORDERS).getMessage())
        .contains("@PostboxListener WithoutId.ship (bean '")
        .contains("has no id");
  }

  @Test
  void aPoolSmallerThanTheListenersConcurrencyPlusTheRelayPlusHeadroomIsRefusedWithTheNumbers() {
    assertThat(
            refusal(
                    App.class,
                    ORDERS,
                    "postbox.topics[" + ORDERS + "].concurrency=16",
                    "postbox.relay.enabled=true")
                .getMessage())
        .contains("the connection pool has 8 connections (maximumPoolSize) but needs 22")
        .contains("16 for the effectively-once listeners (the concurrency of start-shipping 16")
        .contains("4 for the relay and 2 for the application");
  }

  @Test
  void aTransactionManagerOfAnotherDataSourceIsRefused() {
    assertThat(refusal(AppWithAnotherDataSourcesTransactions.class, ORDERS).getMessage())
        .contains("does not manage the DataSource the effectively-once listeners' inbox uses");
  }

  @Test
  void aTopicThatDoesNotExistIsNamed() {
    String absent = "start.absent-" + UUID.randomUUID();
    assertThat(refusal(App.class, absent).getMessage())
        .contains(
            "consumer 'start-shipping': the topic " + absent + " does not exist on the broker");
  }

  @Test
  void twoListenersWithOneIdAreRefused() {
    assertThat(
            refusal(
                    AppWithTwoListenersOfOneId.class,
                    ORDERS,
                    "postbox.topics[" + ORDERS + "].concurrency=1")
                .getMessage())
        .contains("two consumers are named 'start-shipping'");
  }

  @Test
  void theTableCanNameAListenersGroup() {
    try (org.springframework.context.ConfigurableApplicationContext app =
        new SpringApplicationBuilder(App.class)
            .web(WebApplicationType.NONE)
            .properties(
                "postbox.kafka.bootstrap-servers=" + CTX.bootstrapServers(),
                "postbox.relay.enabled=false",
                "postbox.topics[" + ORDERS + "].guarantee=effectively-once",
                "postbox.topics[" + ORDERS + "].concurrency=2",
                "test.orders=" + ORDERS,
                "postbox.listeners.start-shipping.group=shipping-v2")
            .run()) {
      assertThat(app.getBean(PostboxConsumers.class).states()).containsOnlyKeys("shipping-v2");
    }
  }
}
