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
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * The inventory's subscriber on RabbitMQ ({@link InventoryProcess} with transport {@code
 * rabbitmq}): the same handler, inbox ({@code EFFECTIVELY_ONCE}), dead letters, concurrency and
 * ordered parking as on Kafka, on the subscription's shard queues: a wholesale order that fails
 * while the warehouse is down is retried a few times in place, then parked in {@code
 * postbox_parked} with the later orders of its key (acked), and retried as a sequence after {@link
 * InventoryProcess#PARKING_TIERS}, in order, while other keys flow on.
 */
final class RabbitInventory {

  /** A few quick in-place attempts, as on Kafka; then a transient failure parks the key. */
  static final RetryPolicy RETRY =
      RetryPolicy.builder()
          .maxAttempts(3)
          .backoff(new Backoff(Duration.ofMillis(200), Duration.ofSeconds(1), 2, 0.5))
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
      int incarnation) {
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
        .parking(PostgresParkingStore.create(ds))
        .parkingTiers(InventoryProcess.PARKING_TIERS)
        .metrics(metrics)
        .handler(d -> {
          OrderCreated order = d.event(OrderCreated.class);
          if (order.customerId().startsWith(InventoryProcess.WHOLESALE)) {
            guard.run("warehouse", () -> InventoryProcess.reserveAtWarehouse(ds, order));
          }
          InventoryProcess.deductStock(d, outbox, stockTopic, incarnation);
        })
        .build();
  }
}
