package dev.postbox.demo;

import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The test classes the README and docs/guides/testing.md show (also docs/getting-started/java.md):
 * each nested class's body is a page's block, a whole test class (DocSnippetsTest compares them).
 * They are compiled, not run: the nested classes are inner classes, which the build's test runner
 * does not pick up.
 */
@SuppressWarnings("unused")
final class TestingSnippets {

  /** README.md, docs/getting-started/java.md, docs/guides/testing.md. */
  class QuickStart {
    @PostboxTest(migrate = true) // each test gets its own schema, already holding Postbox's tables
    class OrderFlowTest {
      @Test
      void placedOrdersAreShipped(PostboxTestContext ctx) {
        String topic = ctx.topic("shop.orders", 3); // a unique topic for this test
        DataSource ds = ctx.dataSource(); // a pool on this test's schema
        // ... Outbox, Relay.builder(PostgresRelayStore.create(ds),
        // KafkaRelayPublisher.builder(ctx.bootstrapServers()).build()) ...
      }
    }
  }

  /** docs/guides/testing.md, killing and restarting the broker. */
  class KillingTheBroker {
    @PostboxTest
    class MyTest {
      @Test
      void something(PostboxTestContext ctx) {
        DataSource ds = ctx.dataSource(); // fresh schema
        String topic = ctx.topic("orders", 3); // unique topic
        ctx.kafka().kill();
        ctx.kafka().start(); // real broker process
      }
    }
  }
}
