package dev.postbox.spring;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.spring.PostboxSpringBootTest;
import java.sql.Connection;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Transactional;

/**
 * The Spring Boot code samples of the README, docs/getting-started/spring-boot.md,
 * docs/guides/spring-boot.md and docs/spring-boot.md: each nested class's body is a page's block
 * (DocSnippetsTest in postbox-demo compares them), with the types they assume at the bottom. The
 * nested classes are inner classes: compiled here, never picked up by component scanning or a test
 * runner.
 */
@SuppressWarnings("unused")
final class SpringBootSnippets {

  /**
   * The quick start: README.md, docs/getting-started/spring-boot.md, docs/guides/spring-boot.md.
   */
  class QuickStart {
    @Service
    class OrderService {
      private final JdbcTemplate jdbc;
      private final TransactionalOutbox outbox;

      OrderService(JdbcTemplate jdbc, TransactionalOutbox outbox) {
        this.jdbc = jdbc;
        this.outbox = outbox;
      }

      @Transactional
      public void place(Order order) {
        jdbc.update(
            "INSERT INTO orders (id, customer_id) VALUES (?, ?)", order.id(), order.customerId());
        outbox.write(
            Message.builder("order.created", "order.created")
                .key(order.id())
                .jsonPayload(order.toJson())
                .build());
        // or PostboxPublisher.publish(message): the outbox, or for an at-most-once topic a direct
        // send after the commit
      }
    }

    @Service
    class Inventory {
      @PostboxListener(
          id = "inventory",
          topic = "order.created") // id: the consumer group; the rest from the table
      void apply(Delivery delivery, String payload, Connection tx) throws SQLException {
        // effectively-once: the handler runs in a Spring transaction holding the dedupe record;
        // JdbcTemplate,
        // repositories, @Transactional services and tx (its connection) commit with it; each
        // message id applied once
      }
    }
  }

  /** docs/spring-boot.md, the listener's transaction. */
  class ListenerTransaction {
    @Service
    class Shipping {
      private final JdbcTemplate
          jdbc; // or JdbcClient, a Spring Data repository, a @Transactional service
      private final TransactionalOutbox outbox;

      Shipping(JdbcTemplate jdbc, TransactionalOutbox outbox) {
        this.jdbc = jdbc;
        this.outbox = outbox;
      }

      @PostboxListener(id = "shipping", topic = "order.placed")
      void ship(OrderPlaced order) {
        jdbc.update("INSERT INTO shipments (order_id) VALUES (?)", order.id());
        outbox.write(
            Message.builder("shipment.created", "shipment.created")
                .key(order.id())
                .jsonPayload("{\"orderId\":\"%s\"}".formatted(order.id()))
                .build());
      } // returns: one commit of the dedupe row, the shipment and the outgoing message; throws: all
      // rolled back, retried
    }
  }

  /** docs/spring-boot.md, testing a Postbox application. */
  class Testing {
    @SpringBootTest
    @DirtiesContext // close the application (relay and listeners stop) while the broker and
    // database still run
    class ShippingIT {
      static final PostboxTestContext CTX =
          PostboxTestContext.create("shipping"); // a schema of its own
      static final String ORDERS =
          CTX.topic("order.placed"); // creates the topic (unique suffix); create every

      // topic a listener reads before the context starts

      @DynamicPropertySource
      static void properties(DynamicPropertyRegistry registry) {
        registry.add(
            "spring.datasource.url", CTX::jdbcUrl); // or a DataSource bean: CTX.dataSource()
        registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
        registry.add("postbox.topics[" + ORDERS + "].guarantee", () -> "effectively-once");
        registry.add(
            "postbox.topics[" + ORDERS + "].concurrency", () -> "2"); // fits the pool (see above)
        registry.add(
            "shop.order-topic",
            () -> ORDERS); // a listener reads it: @PostboxListener(topic = "${shop.order-topic}")
      }
    }
  }

  /** docs/spring-boot.md, "@PostboxSpringBootTest". */
  class SliceTesting {
    @PostboxSpringBootTest(properties = "postbox.topics[order.placed].concurrency=2")
    class ShippingIT {
      @Autowired TransactionalOutbox outbox;
      @Autowired PostboxTestContext kit; // the test kit's context, if the test wants more topics

      @Test
      void shipsAnOrder() {
        // the application's own topic names: no suffix, no @DynamicPropertySource
      }
    }
  }

  // --- what the blocks assume

  record Order(String id, String customerId) {
    String toJson() {
      return "{\"id\":\"" + id + "\"}";
    }
  }

  record OrderPlaced(String id) {}
}
