package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.IdempotencyKeys;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.IdempotencyKeyBusyException;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.IdempotencyStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The DEDUPLICATED path of the processor (claim, handler, complete or release; wait on a held
 * lease) against an in-memory store that follows the SPI's contract. The Redis store itself is
 * tested against a real redis-server in postbox-redis, the whole path on Kafka in postbox-kafka.
 */
class DeduplicatedProcessingTest {

  /** The SPI's contract in memory, plus scripted answers to the next claims. */
  static final class InMemoryStore implements IdempotencyStore {
    final Map<String, String> leases = new HashMap<>();
    final Map<String, byte[]> done = new HashMap<>();
    final Deque<Claim> scripted = new ArrayDeque<>();
    final List<String> calls = new CopyOnWriteArrayList<>();
    boolean nextClaimAfterExpiry;
    boolean loseLeaseOnComplete;

    @Override
    public synchronized Claim claim(String key, Duration lease, Duration ttl) {
      calls.add("claim " + key);
      if (!scripted.isEmpty()) {
        return scripted.poll();
      }
      if (done.containsKey(key)) {
        return new Duplicate(done.get(key));
      }
      if (leases.containsKey(key)) {
        return new InProgress(lease);
      }
      String token = UUID.randomUUID().toString();
      leases.put(key, token);
      boolean expired = nextClaimAfterExpiry;
      nextClaimAfterExpiry = false;
      return new Claimed(new Lease(key, token), expired);
    }

    @Override
    public synchronized Completion complete(Lease lease, byte[] result, Duration ttl) {
      calls.add("complete " + lease.key() + " " + new String(result, StandardCharsets.UTF_8));
      if (loseLeaseOnComplete || !lease.token().equals(leases.get(lease.key()))) {
        return Completion.LEASE_LOST;
      }
      leases.remove(lease.key());
      done.put(lease.key(), result.clone());
      return Completion.COMPLETED;
    }

    @Override
    public synchronized boolean release(Lease lease) {
      calls.add("release " + lease.key());
      return leases.remove(lease.key(), lease.token());
    }
  }

  private final InMemoryStore store = new InMemoryStore();
  private final List<Duration> slept = new CopyOnWriteArrayList<>();
  private final Map<String, byte[]> duplicates = new HashMap<>();

  private Subscription subscription(DeliveryGuarantee guarantee) {
    return Subscription.builder("billing")
        .topics("orders")
        .guarantee(guarantee)
        .idempotencyLease(Duration.ofSeconds(1))
        .failureHandler(
            FailureHandlers.of(
                RetryPolicy.builder()
                    .maxAttempts(3)
                    .backoff(new Backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2, 0))
                    .build()))
        .build();
  }

  private DeliveryProcessor processor(MessageHandler handler) {
    return processor(subscription(DeliveryGuarantee.DEDUPLICATED), handler);
  }

  private DeliveryProcessor processor(Subscription sub, MessageHandler handler) {
    return DeliveryProcessor.builder(EngineTesting.TRANSPORT, sub)
        .handler(handler)
        .idempotency(
            Optional.of(
                new DeliveryProcessor.Idempotency(
                    store,
                    (d, stored) -> duplicates.put(d.message().id().toString(), stored),
                    slept::add)))
        .time(
            Clock.systemUTC(),
            dev.postbox.core.time.Ticker.SYSTEM,
            dev.postbox.core.time.Sleeper.SYSTEM)
        .metrics(PostboxMetrics.noop())
        .openTelemetry(io.opentelemetry.api.OpenTelemetry.noop())
        .build();
  }

  private static final Message M = Message.builder("orders", "order.created").key("o-1").build();

  private static DeliveryProcessor.Incoming incoming(Message m) {
    return new DeliveryProcessor.Incoming("orders", 0, 7, () -> m, null, new byte[0], List.of());
  }

  @Test
  void theRecordedResultIsStoredAndEveryDuplicateGetsItInsteadOfTheHandler() {
    AtomicInteger effects = new AtomicInteger();
    DeliveryProcessor p =
        processor(d -> {
          effects.incrementAndGet();
          d.recordResult("receipt-1");
        });
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(effects.get()).isEqualTo(1);
    assertThat(p.stats().applied()).isEqualTo(1);
    assertThat(p.stats().duplicatesSuppressed()).isEqualTo(2);
    assertThat(new String(duplicates.get(M.id().toString()), StandardCharsets.UTF_8))
        .isEqualTo("receipt-1");
    assertThat(store.calls).contains("complete billing:" + M.id() + " receipt-1");
  }

  @Test
  void aFailingHandlerReleasesItsLeaseSoTheRetryClaimsIt() {
    AtomicInteger attempts = new AtomicInteger();
    DeliveryProcessor p =
        processor(d -> {
          if (attempts.incrementAndGet() == 1) {
            throw new IllegalStateException("target down");
          }
        });
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(attempts.get()).isEqualTo(2);
    assertThat(store.calls)
        .containsExactly(
            "claim billing:" + M.id(),
            "release billing:" + M.id(),
            "claim billing:" + M.id(),
            "complete billing:" + M.id() + " ");
    assertThat(slept).as("no waiting for a lease").isEmpty();
    assertThat(p.stats().applied()).isEqualTo(1);
  }

  @Test
  void aHeldLeaseIsWaitedForWithTheSleeperAndTheHandlerNeverRunsMeanwhile() {
    store.scripted.add(new IdempotencyStore.InProgress(Duration.ofMillis(500)));
    store.scripted.add(new IdempotencyStore.InProgress(Duration.ofMillis(50)));
    store.scripted.add(new IdempotencyStore.Duplicate("r".getBytes(StandardCharsets.UTF_8)));
    AtomicInteger effects = new AtomicInteger();
    DeliveryProcessor p = processor(d -> effects.incrementAndGet());
    assertThat(p.process(incoming(M), () -> true)).isTrue();
    assertThat(effects.get()).isZero();
    assertThat(slept).containsExactly(Duration.ofMillis(200), Duration.ofMillis(50));
    assertThat(p.stats().duplicatesSuppressed()).isEqualTo(1);
  }

  @Test
  void aLeaseHeldLongerThanOneLeaseIsATransientFailureForTheRetryPolicy() {
    for (int i = 0; i < 1_000; i++) {
      store.scripted.add(new IdempotencyStore.InProgress(Duration.ofSeconds(1)));
    }
    List<Throwable> givenUp = new ArrayList<>();
    Subscription sub =
        Subscription.builder("billing")
            .topics("orders")
            .guarantee(DeliveryGuarantee.DEDUPLICATED)
            .idempotencyLease(Duration.ofSeconds(1))
            .failureHandler(
                new dev.postbox.core.consumer.FailureHandler() {
                  final dev.postbox.core.consumer.FailureHandler base =
                      FailureHandlers.of(
                          RetryPolicy.builder()
                              .maxAttempts(2)
                              .backoff(
                                  new Backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2, 0))
                              .build());

                  @Override
                  public dev.postbox.core.consumer.FailureDecision decide(
                      dev.postbox.core.consumer.Delivery d, Throwable e) {
                    return base.decide(d, e);
                  }

                  @Override
                  public void onGiveUp(
                      dev.postbox.core.consumer.Delivery d, Throwable e, String reason) {
                    givenUp.add(e);
                  }
                })
            .build();
    AtomicInteger effects = new AtomicInteger();
    DeliveryProcessor p = processor(sub, d -> effects.incrementAndGet());
    p.process(incoming(M), () -> true);
    assertThat(effects.get()).isZero();
    assertThat(givenUp).singleElement().isInstanceOf(IdempotencyKeyBusyException.class);
  }

  @Test
  void anExpiredPreviousLeaseAndALostLeaseAreCounted() {
    store.nextClaimAfterExpiry = true;
    store.loseLeaseOnComplete = true;
    DeliveryProcessor p = processor(d -> {});
    p.process(incoming(M), () -> true);
    assertThat(p.stats().leasesExpired()).isEqualTo(1);
    assertThat(p.stats().leasesLost()).isEqualTo(1);
    assertThat(p.stats().applied()).isEqualTo(1);
  }

  @Test
  void recordResultIsRefusedOutsideDeduplicated() {
    List<Throwable> seen = new CopyOnWriteArrayList<>();
    DeliveryProcessor p =
        DeliveryProcessor.builder(
                EngineTesting.TRANSPORT, subscription(DeliveryGuarantee.AT_LEAST_ONCE))
            .handler(d -> {
              try {
                d.recordResult("x");
              } catch (IllegalStateException e) {
                seen.add(e);
              }
            })
            .time(
                Clock.systemUTC(),
                dev.postbox.core.time.Ticker.SYSTEM,
                dev.postbox.core.time.Sleeper.SYSTEM)
            .metrics(PostboxMetrics.noop())
            .openTelemetry(io.opentelemetry.api.OpenTelemetry.noop())
            .build();
    p.process(incoming(M), () -> true);
    assertThat(seen)
        .singleElement()
        .extracting(Throwable::getMessage)
        .asString()
        .contains("DEDUPLICATED");
  }

  @Test
  void aDeduplicatedSubscriptionNeedsAStoreAndValidSettings() {
    assertThatThrownBy(() ->
            DeliveryProcessor.builder(
                    EngineTesting.TRANSPORT, subscription(DeliveryGuarantee.DEDUPLICATED))
                .handler(d -> {})
                .time(
                    Clock.systemUTC(),
                    dev.postbox.core.time.Ticker.SYSTEM,
                    dev.postbox.core.time.Sleeper.SYSTEM)
                .metrics(PostboxMetrics.noop())
                .openTelemetry(io.opentelemetry.api.OpenTelemetry.noop())
                .build())
        .hasMessageContaining("needs an IdempotencyStore");
    assertThatThrownBy(() ->
            Subscription.builder("s")
                .topics("t")
                .guarantee(DeliveryGuarantee.DEDUPLICATED)
                .batchSize(10)
                .idempotencyTtl(Duration.ofSeconds(5))
                .idempotencyLease(Duration.ofSeconds(5))
                .build())
        .hasMessageContaining("batchSize must be 1")
        .hasMessageContaining("must be longer than idempotencyLease");
    Properties props = new Properties();
    props.setProperty("postbox.subscriptions.s.topics", "t");
    props.setProperty("postbox.subscriptions.s.guarantee", "deduplicated");
    props.setProperty("postbox.subscriptions.s.idempotency-ttl", "P14D");
    props.setProperty("postbox.subscriptions.s.idempotency-lease", "PT2M");
    Subscription s = Subscription.fromProperties("s", props).build();
    assertThat(s.guarantee()).isEqualTo(DeliveryGuarantee.DEDUPLICATED);
    assertThat(s.idempotencyTtl()).isEqualTo(Duration.ofDays(14));
    assertThat(s.idempotencyLease()).isEqualTo(Duration.ofMinutes(2));
    Subscription d = Subscription.builder("d").topics("t").build();
    assertThat(d.idempotencyTtl()).isEqualTo(Duration.ofHours(168));
  }

  @Test
  void idempotencyKeysAreStablePerMessageAndScope() {
    Message other = Message.builder("orders", "order.created").key("o-1").build();
    assertThat(IdempotencyKeys.of(M)).isEqualTo(M.id().toString());
    assertThat(IdempotencyKeys.of("charge", M))
        .isEqualTo(IdempotencyKeys.of("charge", M))
        .isNotEqualTo(IdempotencyKeys.of("refund", M))
        .isNotEqualTo(IdempotencyKeys.of("charge", other));
    assertThatThrownBy(() -> IdempotencyKeys.of(" ", M))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
