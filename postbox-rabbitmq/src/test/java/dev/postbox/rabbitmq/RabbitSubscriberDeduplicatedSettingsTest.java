package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.spi.ShardLeaseStore;
import java.lang.reflect.Proxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What {@link RabbitSubscriber.Builder#build()} accepts and refuses for {@code DEDUPLICATED}: it
 * needs an idempotency store, the other guarantees take none; it combines with parking, wait-queue
 * retries, a dead-letter exchange and shard leases; batches are refused by the subscription itself.
 * Nothing connects: {@code build()} only validates.
 */
class RabbitSubscriberDeduplicatedSettingsTest {

  private static final String URI = "amqp://guest:guest@localhost:5672/%2F";

  private static Subscription deduplicated(Ordering ordering) {
    return Subscription.builder("dedup-settings")
        .topics("t")
        .guarantee(DeliveryGuarantee.DEDUPLICATED)
        .ordering(ordering)
        .build();
  }

  /** A store no test here calls: {@code build()} connects to nothing. */
  private static <T> T unused(Class<T> type) {
    return type.cast(
        Proxy.newProxyInstance(
            type.getClassLoader(),
            new Class<?>[] {type},
            (p, m, a) -> {
              throw new UnsupportedOperationException(m.getName());
            }));
  }

  @Test
  void deduplicatedNeedsAnIdempotencyStore() {
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(URI, deduplicated(Ordering.KEY)).handler(d -> {}).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("dedup-settings")
        .hasMessageContaining("is DEDUPLICATED and needs an idempotencyStore");
    assertThatCode(() ->
            RabbitSubscriber.builder(URI, deduplicated(Ordering.KEY))
                .idempotencyStore(unused(IdempotencyStore.class))
                .onDuplicate((d, stored) -> {})
                .handler(d -> {})
                .build())
        .doesNotThrowAnyException();
  }

  @Test
  void anIdempotencyStoreIsRefusedForTheOtherGuarantees() {
    for (DeliveryGuarantee g :
        new DeliveryGuarantee[] {DeliveryGuarantee.AT_MOST_ONCE, DeliveryGuarantee.AT_LEAST_ONCE}) {
      Subscription sub = Subscription.builder("other").topics("t").guarantee(g).build();
      assertThatThrownBy(() ->
              RabbitSubscriber.builder(URI, sub)
                  .idempotencyStore(unused(IdempotencyStore.class))
                  .handler(d -> {})
                  .build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has an idempotencyStore but is " + g + "; use DEDUPLICATED");
    }
  }

  @Test
  void deduplicatedCombinesWithParkingRetryTiersADeadLetterExchangeAndShardLeases() {
    assertThatCode(() ->
            RabbitSubscriber.builder(URI, deduplicated(Ordering.KEY))
                .idempotencyStore(unused(IdempotencyStore.class))
                .parking(unused(ParkingStore.class))
                .shardLeases(unused(ShardLeaseStore.class))
                .deadLetterExchange("dlx")
                .handler(d -> {})
                .build())
        .doesNotThrowAnyException();
    assertThatCode(() ->
            RabbitSubscriber.builder(URI, deduplicated(Ordering.UNORDERED))
                .idempotencyStore(unused(IdempotencyStore.class))
                .retryTiers(Duration.ofSeconds(1), Duration.ofSeconds(10))
                .handler(d -> {})
                .build())
        .doesNotThrowAnyException();
  }

  @Test
  void deduplicatedBatchesAreRefusedByTheSubscription() {
    assertThatThrownBy(() ->
            Subscription.builder("dedup-batch")
                .topics("t")
                .guarantee(DeliveryGuarantee.DEDUPLICATED)
                .batchSize(10)
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("DEDUPLICATED claims one message at a time: batchSize must be 1");
  }
}
