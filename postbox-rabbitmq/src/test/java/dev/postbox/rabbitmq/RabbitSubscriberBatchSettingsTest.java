package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.ParkingStore;
import java.lang.reflect.Proxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What {@link RabbitSubscriber.Builder#build()} refuses, or sizes, for a batch subscription. */
class RabbitSubscriberBatchSettingsTest {

  private static final String URI = "amqp://guest:guest@localhost:5672/%2F";

  private static Subscription batch(int size, Ordering ordering) {
    return Subscription.builder("batch-settings")
        .topics("t")
        .batchSize(size)
        .ordering(ordering)
        .build();
  }

  @Test
  void aBatchNeedsABatchHandler() {
    assertThatThrownBy(
            () -> RabbitSubscriber.builder(URI, batch(10, Ordering.KEY)).handler(d -> {}).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs a batchHandler");
  }

  @Test
  void aPrefetchBelowTheBatchSizeIsRefusedAndTheDefaultIsSizedUp() {
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(URI, batch(200, Ordering.KEY))
                .batchHandler(b -> {})
                .prefetch(50)
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("prefetch 50 is below the batch size 200");
    assertThatCode(() ->
            RabbitSubscriber.builder(URI, batch(200, Ordering.KEY)).batchHandler(b -> {}).build())
        .doesNotThrowAnyException();
    assertThatCode(() ->
            RabbitSubscriber.builder(URI, batch(200, Ordering.KEY))
                .batchHandler(b -> {})
                .prefetch(200)
                .build())
        .doesNotThrowAnyException();
  }

  @Test
  void batchesWithParkingOrRetryTiersAreRefused() {
    ParkingStore parking =
        (ParkingStore)
            Proxy.newProxyInstance(
                ParkingStore.class.getClassLoader(),
                new Class<?>[] {ParkingStore.class},
                (p, m, a) -> {
                  throw new UnsupportedOperationException();
                });
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(URI, batch(10, Ordering.KEY))
                .batchHandler(b -> {})
                .parking(parking)
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batches and parking");
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(URI, batch(10, Ordering.UNORDERED))
                .batchHandler(b -> {})
                .retryTiers(Duration.ofSeconds(1))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batches and retryTiers");
  }
}
