package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.Replayer;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

@PostboxTest
class ReplayAndBreakerIT extends Subscribers {

  static final class NotYetFixed extends PermanentMessageException {
    NotYetFixed() {
      super("product does not exist (yet)");
    }
  }

  @Test
  void replaying1000DeadLettersAt100PerSecondAppliesEachExactlyOnce(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 3);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 1000; i++) {
        ms.add(Effects.message(topic, "k" + (i % 50), i));
      }
      fx.publishAll(ms);
      DeadLetterStore dead = PostgresDeadLetterStore.create(ctx.dataSource());
      AtomicBoolean fixed = new AtomicBoolean();
      Subscription sub =
          Subscription.builder("inventory")
              .topics(topic)
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .deadLetters(dead)
                  .handler(d -> {
                    if (!fixed.get()) {
                      throw new NotYetFixed();
                    }
                    Effects.apply(d.connection().orElseThrow(), "inventory", d);
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().deadLettered() == 1000);
      assertThat(fx.effects("inventory")).isZero();

      fixed.set(true); // the "fix" is deployed; replay through the outbox
      try (Relay relay =
          Relay.builder(
                  PostgresRelayStore.create(ctx.dataSource()),
                  KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
              .pollInterval(Duration.ofMillis(200))
              .build()) {
        relay.start();
        Replayer replayer =
            Replayer.builder(ctx.dataSource(), dead, KafkaDeadLetters.decoder())
                .ratePerSecond(100)
                .by("ops@test")
                .build();
        DeadLetterStore.Query pending =
            new DeadLetterStore.Query(
                Optional.of("inventory"),
                Optional.of(topic),
                Optional.empty(),
                Optional.empty(),
                Optional.of(DeadLetterStore.Status.PENDING),
                Optional.empty(),
                Optional.empty(),
                10_000);
        long t0 = System.nanoTime();
        ReplayResult first = replayer.replayQuery(pending);
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertThat(first.replayed()).hasSize(1000);
        assertThat(seconds).as("rate-limited to 100/s").isGreaterThanOrEqualTo(9.9);
        System.out.printf("replayed 1000 dead letters in %.1f s%n", seconds);

        await().atMost(Duration.ofSeconds(60)).until(() -> fx.distinctEffects("inventory") == 1000);
        ReplayResult second =
            replayer.replayQuery(
                new DeadLetterStore.Query(
                    Optional.of("inventory"),
                    Optional.of(topic),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    10_000));
        assertThat(second.replayed()).as("replaying twice writes nothing new").isEmpty();
        await()
            .atMost(Duration.ofSeconds(30))
            .until(() -> s.stats().received() == 2000 && s.inFlight() == 0);
        assertThat(fx.effects("inventory")).as("each exactly once").isEqualTo(1000);
        assertThat(fx.count("SELECT count(*) FROM postbox_replay_audit")).isPositive();
      }
    }
  }

  @Test
  void aDependencyDownFor20SecondsIsNotHammeredAndEverythingDrainsAfterwards(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("payments", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      AtomicBoolean down = new AtomicBoolean(true);
      AtomicInteger callsWhileDown = new AtomicInteger();
      DependencyGuard guard =
          DependencyGuard.builder()
              .minimumCalls(5)
              .slidingWindowCalls(10)
              .waitInOpenState(Duration.ofSeconds(2))
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("charges")
                          .topics(topic)
                          .failureHandler(
                              FailureHandlers.of(
                                  RetryPolicy.builder()
                                      .maxAttempts(
                                          1_000) // the outage outlasts 10 attempts: the duration
                                      // bounds it
                                      .maxDuration(Duration.ofMinutes(5))
                                      .backoff(
                                          new Backoff(
                                              Duration.ofMillis(100),
                                              Duration.ofSeconds(1),
                                              2,
                                              0.5))
                                      .build()))
                          .build())
                  .handler(d -> {
                    guard.run(
                        "payments",
                        () -> {
                          if (down.get()) {
                            callsWhileDown.incrementAndGet();
                            throw new java.util.concurrent.TimeoutException("payments timed out");
                          }
                        });
                    fx.applyAutoCommit("charges", d);
                  }));
      List<Message> ms = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        ms.add(Effects.message(topic, "account-" + (i % 20), i));
      }
      fx.publishAll(ms);
      await().atMost(Duration.ofSeconds(30)).until(() -> s.stats().retries() > 0);
      Thread.sleep(20_000); // the outage the scenario is about: 20 s of a dead dependency
      int attemptsDuringOutage = callsWhileDown.get();
      down.set(false);
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.distinctEffects("charges") == 200);
      System.out.printf("dependency calls during a 20 s outage: %d%n", attemptsDuringOutage);
      // 20 keys in flight: without the breaker each would retry ~every second (hundreds of calls)
      assertThat(attemptsDuringOutage).isLessThanOrEqualTo(40);
      assertThat(fx.effects("charges")).as("no loss, no duplicate").isEqualTo(200);
      assertThat(s.stats().givenUp()).isZero();
    }
  }
}
