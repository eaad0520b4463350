package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@PostboxTest
class KafkaOutageIT {

  @Test
  void kafkaDownForThirtySecondsUnderLoadLosesNothingAndKeepsOrder(PostboxTestContext ctx)
      throws Exception {
    Shop shop = new Shop(ctx.dataSource(), ctx.topic("orders", 3));
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(ctx.bootstrapServers())
                    .deliveryTimeout(
                        Duration.ofSeconds(5)) // fail fast, so the retry path is exercised
                    .producerProperty("max.block.ms", 5_000)
                    .build())
            .batchSize(100)
            .leaseTtl(
                Duration.ofSeconds(
                    60)) // the lease must outlive the outage: one relay keeps its lanes
            .pollInterval(Duration.ofMillis(200))
            .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2, 0.5))
            .build();
    try (relay) {
      relay.start();
      AtomicInteger n = new AtomicInteger();
      for (int i = 0; i < 300; i++) {
        shop.orderAndRecord("k" + (n.getAndIncrement() % 20));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> relay.stats().published() >= 300);

      ctx.kafka().kill();
      try {
        // Keep the business running for the whole 30 s outage: the outbox absorbs it.
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < until) {
          shop.orderAndRecord("k" + (n.getAndIncrement() % 20));
          Thread.sleep(20); // pace the writers, ~50 business transactions a second
        }
        assertThat(shop.pendingRows()).isPositive();
        assertThat(relay.stats().publishFailures()).as("the relay noticed the outage").isPositive();
      } finally {
        ctx.kafka().start();
      }
      DeliveryHistory.Report report =
          shop.readAndCheck(ctx.bootstrapServers(), Duration.ofSeconds(120));
      assertThat(report.committed()).isEqualTo(n.get());
      assertThat(report.missing()).isZero();
      assertThat(report.orderViolations()).isZero();
      await().atMost(Duration.ofSeconds(60)).until(() -> shop.pendingRows() == 0);
    }
  }
}
