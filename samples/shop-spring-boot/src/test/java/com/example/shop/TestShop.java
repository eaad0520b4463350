package com.example.shop;

import com.example.shop.orders.OrderService;
import dev.postbox.testkit.PostboxTestContext;
import org.apache.kafka.common.errors.TopicExistsException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The test kit's embedded PostgreSQL (a schema of its own) and Kafka broker for the shop's Spring
 * Boot tests: the application's own {@code spring.datasource.url} and {@code
 * postbox.kafka.bootstrap-servers} point at them; the order topic is created with 3 partitions.
 */
final class TestShop {

  static final PostboxTestContext CTX = PostboxTestContext.create("shop");

  private static boolean topicCreated; // guarded by TestShop.class

  private TestShop() {}

  /** The application's settings for a test context; creates the order topic at the first call. */
  static synchronized void properties(DynamicPropertyRegistry registry) {
    if (!topicCreated) {
      try {
        CTX.kafka().createTopic(OrderService.ORDER_CREATED, 3);
      } catch (TopicExistsException alreadyThere) {
        // created by an earlier run against an external broker
      }
      topicCreated = true;
    }
    registry.add("spring.datasource.url", CTX::jdbcUrl);
    registry.add("postbox.kafka.bootstrap-servers", CTX::bootstrapServers);
    registry.add("postbox.relay.poll-interval", () -> "200ms");
  }

  static long count(String sql, Object... args) {
    return new JdbcTemplate(CTX.dataSource()).queryForObject(sql, Long.class, args);
  }
}
