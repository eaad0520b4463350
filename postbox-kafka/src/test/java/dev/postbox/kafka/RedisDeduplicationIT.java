package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.redis.RedisIdempotencyStore;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RedisServer;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * DEDUPLICATED consumers on Kafka with the Redis idempotency store: a handler with no transactional
 * database (it calls a payment API over HTTP) gets dedupe with stored results, and the at-risk
 * window is shown for what it costs.
 */
@PostboxTest
class RedisDeduplicationIT extends Subscribers {

  private RedisServer redis;
  private RedisIdempotencyStore store;
  private FakePaymentApi api;
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void redis() throws Exception {
    redis = RedisServer.sharedOrSkip();
    store = RedisIdempotencyStore.builder(redis.uri()).build();
    api = new FakePaymentApi();
  }

  @AfterEach
  void closeRedis() {
    closeSubscribers(); // before the store they use
    subscribers.clear();
    store.close();
    api.close();
  }

  private static Subscription.Builder deduplicated(String name, String topic) {
    return Subscription.builder(name + "-" + UUID.randomUUID())
        .topics(topic)
        .guarantee(DeliveryGuarantee.DEDUPLICATED);
  }

  @Test
  void everyMessagePublishedTwiceIsChargedOnceAndEachDuplicateGetsTheStoredResult(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("payments", 3);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> once = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        once.add(Effects.message(topic, "order-" + i, i));
      }
      List<Message> twice = new ArrayList<>(once);
      twice.addAll(once); // the same ids again, as a relay would after a crash
      fx.publishAll(twice);
      Map<UUID, String> firstResults = new ConcurrentHashMap<>();
      Map<UUID, String> duplicateResults = new ConcurrentHashMap<>();
      Subscription sub = deduplicated("billing", topic).build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .idempotencyStore(store)
                  .handler(d -> {
                    FakePaymentApi.chargeFor(http, api.url(), false, d); // no key: Redis alone
                    firstResults.put(d.message().id(), "charged");
                  })
                  .onDuplicate((d, stored) ->
                      duplicateResults.put(
                          d.message().id(), new String(stored, StandardCharsets.UTF_8))));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 200 && s.inFlight() == 0);
      assertThat(api.charges()).as("one charge per message id").isEqualTo(100);
      assertThat(api.requests()).isEqualTo(100);
      for (int i = 0; i < 100; i++) {
        assertThat(api.charges("order-" + i)).isEqualTo(1);
      }
      assertThat(s.stats().applied()).isEqualTo(100);
      assertThat(s.stats().duplicatesSuppressed()).isEqualTo(100);
      assertThat(duplicateResults).hasSize(100);
      assertThat(duplicateResults.values()).allMatch(r -> r.startsWith("ch_"));
      assertThat(duplicateResults.values())
          .as("each its own stored charge id")
          .doesNotHaveDuplicates();
      assertThat(s.stats().leasesExpired()).isZero();
    }
  }

  @Test
  void aFailingHandlerReleasesTheLeaseSoItsRetryClaimsAtOnce(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("payments", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      fx.publish(Effects.message(topic, "order-1", 1), null);
      AtomicInteger attempts = new AtomicInteger();
      // a lease far longer than the test may take: a retry finds the key free only if released
      Subscription sub =
          deduplicated("flaky", topic)
              .idempotencyLease(Duration.ofMinutes(10))
              .failureHandler(
                  FailureHandlers.of(
                      RetryPolicy.builder()
                          .maxAttempts(3)
                          .backoff(new Backoff(Duration.ofMillis(10), Duration.ofMillis(20), 2, 0))
                          .build()))
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .idempotencyStore(store)
                  .handler(d -> {
                    if (attempts.incrementAndGet() == 1) {
                      throw new java.io.IOException("payment API timed out");
                    }
                    FakePaymentApi.chargeFor(http, api.url(), false, d);
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == 1);
      assertThat(attempts.get()).isEqualTo(2);
      assertThat(s.stats().retries()).isEqualTo(1);
      assertThat(api.charges("order-1")).isEqualTo(1);
    }
  }

  @Test
  void theSameIdOnTwoInstancesWaitsForTheLeaseAndNeverRunsInParallel(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("payments", 2);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Subscription sub = deduplicated("pair", topic).build();
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger entered = new AtomicInteger();
      AtomicInteger duplicates = new AtomicInteger();
      for (int i = 0; i < 2; i++) {
        start(
            KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                .idempotencyStore(store)
                .onDuplicate((d, stored) -> duplicates.incrementAndGet())
                .handler(d -> {
                  entered.incrementAndGet();
                  Effects.awaitQuietly(release); // hold the lease
                  FakePaymentApi.chargeFor(http, api.url(), false, d);
                }));
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> subscribers.stream().allMatch(s -> s.assignment().size() == 1));
      Message m = Effects.message(topic, "order-7", 7);
      fx.publish(m, 0);
      fx.publish(m, 1); // the same id on the other partition: the other instance gets it
      await().atMost(Duration.ofSeconds(60)).until(() -> entered.get() == 1);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> subscribers.stream().mapToLong(s -> s.stats().received()).sum() == 2);
      assertThat(entered.get()).as("the second delivery waits on the lease").isEqualTo(1);
      release.countDown();
      await().atMost(Duration.ofSeconds(60)).until(() -> duplicates.get() == 1);
      assertThat(entered.get()).isEqualTo(1);
      assertThat(api.charges("order-7")).isEqualTo(1);
    }
  }

  @Test
  void aTtlShorterThanTheTopicsRetentionIsRefusedUnlessForced(PostboxTestContext ctx) {
    String topic = ctx.topic("payments", 1, Map.of("retention.ms", "3600000"));
    Subscription shortLived =
        deduplicated("short", topic)
            .idempotencyTtl(Duration.ofMinutes(10))
            .idempotencyLease(Duration.ofSeconds(30))
            .build();
    KafkaSubscriber refused =
        KafkaSubscriber.builder(ctx.bootstrapServers(), shortLived)
            .idempotencyStore(store)
            .handler(d -> {})
            .build();
    assertThatThrownBy(refused::start)
        .isInstanceOf(IdempotencyTtlTooShortException.class)
        .hasMessageContaining("PT10M")
        .hasMessageContaining("PT1H")
        .hasMessageContaining("applied twice");
    KafkaSubscriber forced =
        start(
            KafkaSubscriber.builder(ctx.bootstrapServers(), shortLived)
                .idempotencyStore(store)
                .forceIdempotencyTtl(true)
                .handler(d -> {}));
    assertThat(forced.state().running()).isTrue();

    assertThatThrownBy(() ->
            KafkaSubscriber.builder(ctx.bootstrapServers(), shortLived).handler(d -> {}).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs an idempotencyStore");
  }

  /**
   * The at-risk window: the consumer halts after the payment API charged and before the completion
   * reached Redis. Once the lease expires, the next delivery charges again (Redis alone: the
   * documented cost, counted as an expired lease), unless the charge carried an idempotency key
   * derived from the message id, which the API honours.
   */
  @ParameterizedTest(name = "idempotency key sent: {0}")
  @ValueSource(booleans = {false, true})
  void aCrashBetweenTheEffectAndTheCompletionRepeatsTheEffectUnlessTheTargetHonoursTheKey(
      boolean withKey, PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("payments", 1);
    String group = "window-" + withKey + "-" + UUID.randomUUID();
    long leaseMs = 3_000;
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      fx.publish(Effects.message(topic, "order-1", 1), null);
      try (ChildJvm child =
          ChildJvm.builder(RedisConsumerChildMain.class)
              .args(
                  redis.uri(),
                  ctx.bootstrapServers(),
                  topic,
                  group,
                  api.url(),
                  Boolean.toString(withKey),
                  Long.toString(leaseMs))
              .systemProperty(
                  CrashPoints.PROPERTY,
                  CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_IDEMPOTENCY_COMPLETE)
              .start()) {
        assertThat(child.waitFor(Duration.ofSeconds(120))).contains(CrashPoints.EXIT_CODE);
      }
      assertThat(api.requests()).as("the effect happened before the crash").isEqualTo(1);
      Subscription sub =
          Subscription.builder(group)
              .topics(topic)
              .guarantee(DeliveryGuarantee.DEDUPLICATED)
              .idempotencyLease(Duration.ofMillis(leaseMs))
              .build();
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .idempotencyStore(store)
                  .handler(d -> FakePaymentApi.chargeFor(http, api.url(), withKey, d)));
      await().atMost(Duration.ofSeconds(90)).until(() -> s.stats().applied() == 1);
      assertThat(s.stats().leasesExpired()).as("the window is counted").isEqualTo(1);
      assertThat(api.requests()).as("the effect ran again").isEqualTo(2);
      assertThat(api.charges("order-1"))
          .as(withKey ? "the API deduped by the key" : "charged twice: the window's cost")
          .isEqualTo(withKey ? 1 : 2);
    }
  }
}
