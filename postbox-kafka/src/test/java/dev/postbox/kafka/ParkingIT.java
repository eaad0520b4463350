package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@PostboxTest
class ParkingIT extends Subscribers {

  @Test
  void aParkedKeyIsRetriedAsASequenceInOrderWhileOtherKeysFlowOn(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      ms.add(Effects.message(topic, "order-7", 1).toBuilder().header("event", "created").build());
      for (int i = 0; i < 50; i++) {
        ms.add(Effects.message(topic, "other-" + (i % 10), 100 + i));
      }
      ms.add(Effects.message(topic, "order-7", 2).toBuilder().header("event", "updated").build());
      ms.add(Effects.message(topic, "order-7", 3).toBuilder().header("event", "cancelled").build());
      fx.publishAll(ms);
      AtomicInteger createdAttempts = new AtomicInteger();
      Subscription sub =
          Subscription.builder("orders")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .failureHandler(FailureHandlers.of(RetryPolicy.builder().maxAttempts(1).build()))
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .deadLetters(PostgresDeadLetterStore.create(ctx.dataSource()))
                  .parking(PostgresParkingStore.create(ctx.dataSource()))
                  .parkingTiers(
                      Duration.ofMillis(200), Duration.ofMillis(200), Duration.ofMillis(200))
                  .handler(d -> {
                    if (d.message().header("event").orElse("").equals("created")
                        && createdAttempts.incrementAndGet() <= 2) {
                      throw new IllegalStateException("inventory service unavailable");
                    }
                    Effects.apply(d.connection().orElseThrow(), "orders", d);
                  }));
      // other keys are not held back by the parked one
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("orders") >= 50);
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("orders") == 53);
      // the last parked row is removed just after its effect commits
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> fx.count("SELECT count(*) FROM postbox_parked") == 0);
      assertThat(fx.effectOrder("orders").get("order-7")).containsExactly(1L, 2L, 3L);
      assertThat(createdAttempts.get()).isEqualTo(3);
      assertThat(s.stats().parked()).as("the failing head and the two behind it").isEqualTo(3);
      assertThat(s.stats().unparked()).isEqualTo(3);
      assertThat(s.stats().deadLettered()).isZero();
      assertThat(fx.count("SELECT count(*) FROM postbox_parked")).isZero();
    }
  }

  @Test
  void aParkedHeadThatNeverRecoversIsDeadLetteredAndTheKeyGoesOn(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      fx.publishAll(
          List.of(
              Effects.message(topic, "k", 1).toBuilder().header("event", "poison").build(),
              Effects.message(topic, "k", 2),
              Effects.message(topic, "k", 3)));
      Subscription sub =
          Subscription.builder("skipper")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .failureHandler(FailureHandlers.of(RetryPolicy.builder().maxAttempts(1).build()))
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .deadLetters(PostgresDeadLetterStore.create(ctx.dataSource()))
                  .parking(PostgresParkingStore.create(ctx.dataSource()))
                  .parkingTiers(Duration.ofMillis(100), Duration.ofMillis(100))
                  .handler(d -> {
                    if (d.message().header("event").orElse("").equals("poison")) {
                      throw new IllegalStateException("always fails");
                    }
                    Effects.apply(d.connection().orElseThrow(), "skipper", d);
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("skipper") == 2);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> fx.count("SELECT count(*) FROM postbox_parked") == 0);
      assertThat(fx.effectOrder("skipper").get("k")).containsExactly(2L, 3L);
      assertThat(s.stats().deadLettered()).isEqualTo(1);
      assertThat(fx.count("SELECT count(*) FROM postbox_dead_letter WHERE consumer = 'skipper'"))
          .isEqualTo(1);
    }
  }
}
