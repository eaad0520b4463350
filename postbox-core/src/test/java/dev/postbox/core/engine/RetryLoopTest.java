package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.FakeTime;
import io.opentelemetry.api.OpenTelemetry;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The retry loop on fake time: its schedule (attempts and backoff waits, sliced for ownership
 * checks), giving up into the dead letters, and abandoning a record as soon as it is no longer
 * owned, whether it waits for a backoff or for a store. Nothing here sleeps.
 */
class RetryLoopTest {

  private static final Message M = Message.builder("orders", "order.created").key("o-1").build();
  private static final Duration MS_50 = Duration.ofMillis(50);

  private final FakeTime time = FakeTime.create();
  private final List<Integer> attempts = new CopyOnWriteArrayList<>();
  private final List<NewDeadLetter> deadLetters = new CopyOnWriteArrayList<>();

  /** 4 attempts, 100 ms doubling, no jitter, on the fake clock. */
  private Subscription subscription() {
    return subscription(Subscription.DEFAULT_GUARANTEE);
  }

  private Subscription subscription(DeliveryGuarantee guarantee) {
    return Subscription.builder("billing")
        .topics("orders")
        .guarantee(guarantee)
        .failureHandler(
            FailureHandlers.of(
                RetryPolicy.builder()
                    .maxAttempts(4)
                    .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0))
                    .clock(time.clock())
                    .build()))
        .build();
  }

  private final MessageHandler alwaysFails =
      d -> {
        attempts.add(d.attempt());
        throw new IllegalStateException("payments down");
      };

  private DeliveryProcessor processor(MessageHandler handler, Optional<ParkingStore> parking) {
    return processor(subscription(), handler, parking, Optional.empty());
  }

  private DeliveryProcessor processor(
      Subscription subscription,
      MessageHandler handler,
      Optional<ParkingStore> parking,
      Optional<DeliveryProcessor.RetriesExhausted> retriesExhausted) {
    return DeliveryProcessor.builder(EngineTesting.TRANSPORT, subscription)
        .handler(handler)
        .deadLetters(Optional.of(deadLetterStore()))
        .parking(
            parking.map(p ->
                new DeliveryProcessor.Parking(
                    p,
                    List.of(Duration.ofMinutes(1)),
                    true,
                    r -> {
                      throw new UnsupportedOperationException();
                    })))
        .retriesExhausted(retriesExhausted)
        .time(time.clock(), time, time)
        .metrics(PostboxMetrics.noop())
        .openTelemetry(OpenTelemetry.noop())
        .build();
  }

  private static DeliveryProcessor.Incoming incoming() {
    return new DeliveryProcessor.Incoming(
        "orders", 0, 7, () -> M, new byte[] {1}, new byte[] {2}, List.of());
  }

  @Test
  void retriesOnTheBackoffScheduleThenGivesUpIntoTheDeadLetters() {
    DeliveryProcessor p = processor(alwaysFails, Optional.empty());

    assertThat(p.process(incoming(), () -> true)).isTrue();

    assertThat(attempts).containsExactly(1, 2, 3, 4);
    // 100, 200 and 400 ms, each waited in 50 ms slices between ownership checks
    assertThat(time.sleeps()).hasSize(2 + 4 + 8).allMatch(MS_50::equals);
    assertThat(time.sleeps().stream().reduce(Duration.ZERO, Duration::plus))
        .isEqualTo(Duration.ofMillis(700));
    assertThat(deadLetters)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
          assertThat(l.attempts()).isEqualTo(4);
          assertThat(l.firstFailure()).isEqualTo(time.now().minus(Duration.ofMillis(700)));
        });
    assertThat(p.stats().retries()).isEqualTo(3);
    assertThat(p.stats().givenUp()).isEqualTo(1);
    assertThat(p.stats().deadLettered()).isEqualTo(1);
  }

  @Test
  void atMostOnceNeverRunsAFailedHandlerAgainNorHandsItToDelayedRetries() {
    List<Integer> handedOff = new CopyOnWriteArrayList<>();
    DeliveryProcessor p =
        processor(
            subscription(DeliveryGuarantee.AT_MOST_ONCE),
            alwaysFails,
            Optional.empty(),
            Optional.of((in, e, attempt, first, owned) -> handedOff.add(attempt)));

    assertThat(p.process(incoming(), () -> true)).isTrue();

    // the same policy retries 4 times under the other guarantees (above); here the message was
    // acknowledged before the handler ran, so a second run would repeat it
    assertThat(attempts).containsExactly(1);
    assertThat(time.sleeps()).isEmpty();
    assertThat(handedOff).as("no retry topic or wait queue either").isEmpty();
    assertThat(deadLetters)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
          assertThat(l.attempts()).isEqualTo(1);
        });
    assertThat(p.stats().retries()).isZero();
    assertThat(p.stats().deadLettered()).isEqualTo(1);
  }

  @Test
  void theOtherGuaranteesHandAnExhaustedMessageToDelayedRetries() {
    List<Integer> handedOff = new CopyOnWriteArrayList<>();
    DeliveryProcessor p =
        processor(
            subscription(DeliveryGuarantee.AT_LEAST_ONCE),
            alwaysFails,
            Optional.empty(),
            Optional.of((in, e, attempt, first, owned) -> handedOff.add(attempt)));

    assertThat(p.process(incoming(), () -> true)).isTrue();

    assertThat(attempts).containsExactly(1, 2, 3, 4);
    assertThat(handedOff).containsExactly(4);
    assertThat(deadLetters).isEmpty();
  }

  @Test
  void aMappingThatThrowsSomethingElseThanDecodingIsDeadLetteredAsPermanentNotLeftUnfinished() {
    DeliveryProcessor p = processor(alwaysFails, Optional.empty());
    DeliveryProcessor.Incoming broken =
        new DeliveryProcessor.Incoming(
            "orders",
            0,
            8,
            () -> {
              throw new ArrayIndexOutOfBoundsException("a mapping bug");
            },
            null,
            new byte[] {2},
            List.of());

    assertThat(p.process(broken, () -> true)).as("finished").isTrue();

    assertThat(attempts).as("never handled, never retried").isEmpty();
    assertThat(deadLetters)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.classification()).isEqualTo(Classification.PERMANENT);
          assertThat(l.errorClass()).isEqualTo(dev.postbox.core.DecodingException.class.getName());
          assertThat(l.errorMessage())
              .contains("ArrayIndexOutOfBoundsException")
              .doesNotContain("a mapping bug");
        });
  }

  @Test
  void aRecordThatSucceedsOnItsThirdAttemptWaitsTheFirstTwoBackoffsOnly() {
    DeliveryProcessor p =
        processor(
            d -> {
              attempts.add(d.attempt());
              if (d.attempt() < 3) {
                throw new IllegalStateException("not yet");
              }
            },
            Optional.empty());

    assertThat(p.process(incoming(), () -> true)).isTrue();

    assertThat(attempts).containsExactly(1, 2, 3);
    assertThat(time.sleeps()).hasSize(2 + 4);
    assertThat(p.stats().applied()).isEqualTo(1);
    assertThat(deadLetters).isEmpty();
  }

  @Test
  void aRecordNoLongerOwnedDuringItsBackoffIsAbandonedNotFinished() {
    DeliveryProcessor p = processor(alwaysFails, Optional.empty());
    long revokedAt = time.nanos() + Duration.ofMillis(120).toNanos();
    BooleanSupplier owned = () -> time.nanos() < revokedAt;

    assertThat(p.process(incoming(), owned)).isFalse();

    // attempt 1, 100 ms wait, attempt 2, then the first ownership check past 120 ms
    assertThat(attempts).containsExactly(1, 2);
    assertThat(time.sleeps()).containsExactly(MS_50, MS_50, MS_50);
    assertThat(deadLetters).isEmpty();
    assertThat(p.stats().givenUp()).isZero();
  }

  @Test
  void aRecordWhoseParkedStateCannotBeReadIsAbandonedOnceNoLongerOwned() {
    ParkingStore broken =
        store(
            ParkingStore.class,
            "appendIfParked",
            args -> {
              throw new IllegalStateException("database down");
            });
    DeliveryProcessor p = processor(alwaysFails, Optional.of(broken));
    long revokedAt = time.nanos() + Duration.ofSeconds(2).toNanos();

    assertThat(p.process(incoming(), () -> time.nanos() < revokedAt)).isFalse();

    assertThat(attempts).as("never applied ahead of a parked head it could not see").isEmpty();
    assertThat(time.sleeps()).allMatch(s -> s.compareTo(MS_50) <= 0);
    assertThat(time.sleeps().stream().reduce(Duration.ZERO, Duration::plus))
        .isGreaterThanOrEqualTo(Duration.ofSeconds(2));
  }

  private DeadLetterStore deadLetterStore() {
    return store(
        DeadLetterStore.class,
        "add",
        args -> {
          deadLetters.add((NewDeadLetter) args[0]);
          return (long) deadLetters.size();
        });
  }

  /** A store that answers {@code method} with {@code answer} and refuses everything else. */
  @SuppressWarnings("unchecked")
  static <T> T store(
      Class<T> type, String method, java.util.function.Function<Object[], ?> answer) {
    return (T)
        Proxy.newProxyInstance(
            type.getClassLoader(),
            new Class<?>[] {type},
            (proxy, m, args) -> {
              if (m.getName().equals(method)) {
                return answer.apply(args == null ? new Object[0] : args);
              }
              if (m.getName().equals("toString")) {
                return "fake " + type.getSimpleName();
              }
              throw new UnsupportedOperationException(m.getName() + Collections.emptyList());
            });
  }
}
