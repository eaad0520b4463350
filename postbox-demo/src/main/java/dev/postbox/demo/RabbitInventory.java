package dev.postbox.demo;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.demo.ShopEvents.OrderCreated;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * The inventory's subscriber on RabbitMQ ({@link InventoryProcess} with transport {@code
 * rabbitmq}): the same handler, inbox ({@code EFFECTIVELY_ONCE}), dead letters and concurrency as
 * on Kafka, on the subscription's consistent-hash shard queues.
 *
 * <p>One difference: the RabbitMQ subscriber has no ordered parking yet (issue 16), so a wholesale
 * order that fails while the warehouse is down is retried <em>in place</em>, in its key's lane,
 * until the warehouse is back ({@link #RETRY}: attempts while the breaker is open are not counted,
 * and the counted ones outlast the demo's longest outage). Its key's later orders wait behind it
 * (order kept) and other keys flow on. Each such failure records the key in {@value #WAITS_TABLE},
 * which the demo reads as the keys held back (its {@code parked_keys}).
 */
final class RabbitInventory {

  /** Keys whose orders failed at the warehouse and were retried in place. */
  static final String WAITS_TABLE = "warehouse_waits";

  /** In-place retries that outlast a 25 s outage: 40 counted attempts, at most 2 s apart. */
  static final RetryPolicy RETRY =
      RetryPolicy.builder()
          .maxAttempts(40)
          .maxDuration(Duration.ofMinutes(2))
          .backoff(new Backoff(Duration.ofMillis(200), Duration.ofSeconds(2), 2, 0.5))
          .build();

  private RabbitInventory() {}

  static RabbitSubscriber subscriber(
      String uri,
      String ordersTopic,
      String name,
      DataSource ds,
      InboxStore inbox,
      PostboxMetrics metrics,
      DependencyGuard guard,
      Outbox outbox,
      String stockTopic,
      int incarnation)
      throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS "
              + WAITS_TABLE
              + " (msg_key text NOT NULL, at timestamptz NOT NULL DEFAULT now())");
    }
    Subscription subscription =
        Subscription.builder(name)
            .topics(ordersTopic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .eventTypes(ShopEvents.TYPES)
            .concurrency(InventoryProcess.CONCURRENCY)
            .failureHandler(FailureHandlers.of(RETRY))
            .build();
    return RabbitSubscriber.builder(uri, subscription)
        .inbox(inbox)
        .shards(RabbitShopTransport.SHARDS)
        .deadLetters(PostgresDeadLetterStore.create(ds))
        .metrics(metrics)
        .handler(d -> {
          OrderCreated order = d.event(OrderCreated.class);
          if (order.customerId().startsWith(InventoryProcess.WHOLESALE)) {
            try {
              guard.run("warehouse", () -> InventoryProcess.reserveAtWarehouse(ds, order));
            } catch (Exception e) {
              recordWait(ds, order.customerId());
              throw e;
            }
          }
          InventoryProcess.deductStock(d, outbox, stockTopic, incarnation);
        })
        .build();
  }

  private static void recordWait(DataSource ds, String key) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + WAITS_TABLE + " (msg_key) VALUES (?)")) {
      ps.setString(1, key);
      ps.executeUpdate();
    } catch (Exception e) {
      // only the demo's record of a wait; the retry goes on regardless
    }
  }
}
