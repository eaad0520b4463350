package dev.postbox.demo;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.IdempotencyKeys;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.Replayer;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.redis.RedisIdempotencyStore;
import java.sql.Connection;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * The plain-Java code samples of the README, docs/getting-started/java.md and the concepts pages,
 * kept here so that the build fails when they stop compiling: each method's body is a page's block
 * (DocSnippetsTest compares them, ignoring layout and comments), with the helpers they assume
 * stubbed at the bottom. outbox, relay and consumer: README.md, docs/getting-started/java.md and
 * docs/concepts/outbox.md, relays.md, inbox.md; failures and replay: docs/concepts/failures.md;
 * deduplicated: docs/guides/redis.md.
 */
@SuppressWarnings("unused")
final class ReadmeSnippets {

  void outbox(DataSource dataSource, Order order, String json) {
    Outbox outbox = Outbox.postgres();
    outbox.inTransaction(
        dataSource,
        tx -> {
          insertOrder(tx.connection(), order); // your business change
          tx.write(
              Message.builder("shop.orders", "order.created")
                  .key(order.customerId()) // ordering key
                  .jsonPayload(json)
                  .build());
          return null;
        });
  }

  void relay(DataSource dataSource) {
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(dataSource),
                KafkaRelayPublisher.builder("localhost:9092").build())
            .build();
    relay.start(); // ... relay.close() on shutdown
  }

  void consumer(DataSource dataSource, String sku, long version, int quantity) {
    Subscription inventory =
        Subscription.builder("inventory") // consumer group = inbox name
            .topics("shop.orders")
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY) // per-key order, keys in parallel
            .concurrency(64)
            .build();
    KafkaSubscriber subscriber =
        KafkaSubscriber.builder("localhost:9092", inventory)
            .inbox(PostgresInboxStore.create(dataSource))
            .handler(delivery -> {
              Connection tx = delivery.connection().orElseThrow(); // the inbox transaction
              if (delivery.advanceVersion("sku:" + sku, version)) { // skip older events
                deductStock(tx, sku, quantity); // commits with the dedupe record
              }
            })
            .build();
    subscriber.start(); // ... subscriber.close() drains, commits and leaves the group
  }

  void failures() {
    RetryPolicy policy =
        RetryPolicy.builder()
            .maxAttempts(5)
            .maxDuration(Duration.ofMinutes(2)) // bounded by count and by time
            .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0.5))
            .retryOn(PaymentGatewayBusy.class)
            .abortOn(InvalidOrder.class)
            .build();
    Subscription inventory =
        Subscription.builder("inventory")
            .topics("shop.orders")
            .failureHandler(
                FailureHandlers.builder()
                    .retryPolicy(policy)
                    .onDeadLetter(event -> alerting.notify(event))
                    .retryBudget(50)
                    .build())
            .build();
  }

  void deduplicated() {
    RedisIdempotencyStore store = RedisIdempotencyStore.builder("redis://localhost:6379").build();
    Subscription sub =
        Subscription.builder("payments")
            .topics("shop.orders")
            .guarantee(DeliveryGuarantee.DEDUPLICATED)
            .idempotencyTtl(Duration.ofHours(168)) // default; must cover the topic's retention.ms
            .idempotencyLease(
                Duration.ofSeconds(60)) // default; the longest one handler call may take
            .build();
    KafkaSubscriber.builder("localhost:9092", sub)
        .idempotencyStore(store)
        .handler(d -> {
          String chargeId =
              payments.charge(
                  order(d), IdempotencyKeys.of("charge", d.message())); // the target dedupes too
          d.recordResult(chargeId); // stored with the message id
        })
        .onDuplicate(
            (d, storedResult) -> reply(d, storedResult)) // a duplicate gets the first result
        .build()
        .start();
  }

  interface Payments {
    String charge(Order order, String idempotencyKey);
  }

  private final Payments payments = (order, key) -> "ch_1";

  private static Order order(dev.postbox.core.consumer.Delivery d) {
    return new Order("c");
  }

  private static void reply(dev.postbox.core.consumer.Delivery d, byte[] result) {}

  void replay(DataSource ds, DeadLetterStore deadLetters) {
    Replayer replayer =
        Replayer.builder(ds, deadLetters, KafkaDeadLetters.decoder())
            .ratePerSecond(100)
            .by("alice")
            .build();
  }

  static final class PaymentGatewayBusy extends RuntimeException {}

  static final class InvalidOrder extends RuntimeException {}

  interface Alerting {
    void notify(Object event);
  }

  private final Alerting alerting = event -> {};

  record Order(String customerId) {}

  private static void insertOrder(Connection c, Order order) {}

  private static void deductStock(Connection c, String sku, int quantity) {}
}
