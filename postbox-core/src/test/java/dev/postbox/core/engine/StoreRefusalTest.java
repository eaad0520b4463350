package dev.postbox.core.engine;

import static dev.postbox.core.engine.RetryLoopTest.store;
import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.codec.StoredText;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.FakeTime;
import io.opentelemetry.api.OpenTelemetry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 2: a store write refused for good (a permanent SQLSTATE) is never retried forever.
 * The record is dead-lettered with what the store accepts (its texts escaped, else its position
 * only), or, refused by the parking store, dead-lettered instead of parked; each refusal is counted
 * on {@code postbox.consumer.store.refused}, and the record is finished (its offset may be
 * committed). On fake time: nothing here sleeps, and nothing may wait.
 */
class StoreRefusalTest {

  private static final Message M = Message.builder("orders", "order.created").key("o-1").build();
  private static final Tags PARTITION_0 =
      Tags.of("group", "billing", "topic", "orders", "partition", "0");

  private final FakeTime time = FakeTime.create();
  private final List<NewDeadLetter> stored = new CopyOnWriteArrayList<>();
  private final AtomicInteger adds = new AtomicInteger();
  private final AtomicLong refusedCount = new AtomicLong();
  private final AtomicInteger handled = new AtomicInteger();

  /** A NUL in a header name, as a producer can send it. */
  private static DeliveryProcessor.Incoming undecodable() {
    return new DeliveryProcessor.Incoming(
        "orders",
        0,
        7,
        () -> {
          throw DecodingException.builder("missing header ce_specversion", new byte[] {'{', '}'})
              .build();
        },
        new byte[] {'k'},
        new byte[] {'{', '}'},
        List.of(new Header("no\u0000te", new byte[] {'x'})));
  }

  /** A store refusing (SQLSTATE {@code state}) every letter {@code refused} matches. */
  private DeadLetterStore deadLetters(Predicate<NewDeadLetter> refused, String state) {
    return store(
        DeadLetterStore.class,
        "add",
        args -> {
          adds.incrementAndGet();
          NewDeadLetter l = (NewDeadLetter) args[0];
          if (refused.test(l)) {
            throw new IllegalStateException(
                "storing the dead letter failed", new SQLException("refused", state));
          }
          stored.add(l);
          return (long) stored.size();
        });
  }

  private static boolean hasNul(NewDeadLetter l) {
    return l.headers().stream().anyMatch(h -> h.name().indexOf('\0') >= 0);
  }

  private DeliveryProcessor processor(DeadLetterStore deadLetters, Optional<ParkingStore> parking) {
    Subscription sub =
        Subscription.builder("billing")
            .topics("orders")
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(1)
                        .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0))
                        .clock(time.clock())
                        .build()))
            .build();
    return DeliveryProcessor.builder(EngineTesting.TRANSPORT, sub)
        .handler(d -> {
          handled.incrementAndGet();
          throw new IllegalStateException("payments down");
        })
        .deadLetters(Optional.of(deadLetters))
        .parking(
            parking.map(p ->
                new DeliveryProcessor.Parking(
                    p,
                    List.of(Duration.ofMinutes(1)),
                    true,
                    r -> {
                      throw new UnsupportedOperationException();
                    })))
        .time(time.clock(), time, time)
        .metrics(metrics())
        .openTelemetry(OpenTelemetry.noop())
        .build();
  }

  /** Counts {@code postbox.consumer.store.refused} of partition 0 only. */
  private PostboxMetrics metrics() {
    return new PostboxMetrics() {
      @Override
      public Counter counter(MetricName name, Tags tags) {
        return name == MetricName.CONSUMER_STORE_REFUSED && tags.equals(PARTITION_0)
            ? refusedCount::addAndGet
            : n -> {};
      }

      @Override
      public Timer timer(MetricName name, Tags tags) {
        return d -> {};
      }

      @Override
      public void gauge(MetricName name, Tags tags, DoubleSupplier value) {}
    };
  }

  @Test
  void aLetterRefusedForItsTextIsStoredEscapedOnceNotRetried() {
    DeliveryProcessor p =
        processor(deadLetters(StoreRefusalTest::hasNul, "22021"), Optional.empty());

    assertThat(p.process(undecodable(), () -> true)).as("finished").isTrue();

    assertThat(adds).as("the letter, then its escaped form: no retry of the same row").hasValue(2);
    assertThat(time.sleeps()).isEmpty();
    assertThat(stored)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.headers()).extracting(Header::name).containsExactly("\\~no\\0te");
          assertThat(StoredText.decode(l.headers().get(0).name())).isEqualTo("no\u0000te");
          assertThat(l.key()).containsExactly('k');
          assertThat(l.value()).containsExactly('{', '}');
          assertThat(StoredText.decode(l.errorMessage()))
              .contains("refused this letter as it was (SQLSTATE 22021)")
              .contains("missing header ce_specversion");
          assertThat(l.classification()).isEqualTo(Classification.PERMANENT);
        });
    assertThat(refusedCount).hasValue(1);
    assertThat(p.stats().deadLettered()).isEqualTo(1);
  }

  @Test
  void aLetterRefusedWhateverItsTextKeepsItsPositionOnly() {
    // a key too large for its index: 54000 for every letter with a key
    DeliveryProcessor p = processor(deadLetters(l -> l.key() != null, "54000"), Optional.empty());

    assertThat(p.process(undecodable(), () -> true)).isTrue();

    assertThat(adds).hasValue(3);
    assertThat(stored)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.offset()).isEqualTo(7);
          assertThat(l.key()).isNull();
          assertThat(l.headers()).isEmpty();
          assertThat(l.errorMessage()).contains("only its position is kept");
        });
    assertThat(refusedCount).hasValue(2);
  }

  @Test
  void aRecordNothingOfWhichIsAcceptedIsFinishedLoudlyNotRetriedForever() {
    DeliveryProcessor p = processor(deadLetters(l -> true, "23514"), Optional.empty());

    assertThat(p.process(undecodable(), () -> true)).as("finished: its partition goes on").isTrue();

    assertThat(adds).hasValue(3);
    assertThat(stored).isEmpty();
    assertThat(refusedCount).hasValue(3);
    assertThat(p.stats().deadLettered()).isZero();
  }

  @Test
  void aTransientFailureIsStillRetriedUntilItSucceeds() {
    AtomicInteger failures = new AtomicInteger();
    DeliveryProcessor p =
        processor(deadLetters(l -> failures.incrementAndGet() <= 2, "40P01"), Optional.empty());

    assertThat(p.process(undecodable(), () -> true)).isTrue();

    assertThat(adds).hasValue(3);
    assertThat(stored).singleElement().satisfies(l -> assertThat(l.headers()).hasSize(1));
    assertThat(stored.get(0).headers().get(0).name()).isEqualTo("no\u0000te");
    assertThat(refusedCount).hasValue(0);
    assertThat(time.sleeps()).isNotEmpty();
  }

  @Test
  void aRecordTheParkingStoreRefusesIsDeadLetteredInstead() {
    ParkingStore parking =
        store(
            ParkingStore.class,
            "appendIfParked",
            args -> {
              throw new IllegalStateException(
                  "appending failed",
                  new SQLException("invalid byte sequence for encoding UTF8: 0x00", "22021"));
            });
    DeliveryProcessor p = processor(deadLetters(l -> false, "-"), Optional.of(parking));
    DeliveryProcessor.Incoming in =
        new DeliveryProcessor.Incoming(
            "orders", 0, 7, () -> M, new byte[] {'k'}, new byte[] {2}, List.of());

    assertThat(p.process(in, () -> true)).isTrue();

    assertThat(handled)
        .as("never applied ahead of a parked sequence it could not check")
        .hasValue(0);
    assertThat(stored)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.classification()).isEqualTo(Classification.PERMANENT);
          assertThat(l.errorMessage()).contains("refused by the store for good (SQLSTATE 22021)");
        });
    assertThat(refusedCount).hasValue(1);
    assertThat(time.sleeps()).isEmpty();
  }

  @Test
  void aRecordWhoseParkingIsRefusedIsDeadLetteredInsteadOfParked() {
    ParkingStore refusing =
        (ParkingStore)
            java.lang.reflect.Proxy.newProxyInstance(
                ParkingStore.class.getClassLoader(),
                new Class<?>[] {ParkingStore.class},
                (proxy, m, args) ->
                    switch (m.getName()) {
                      case "appendIfParked" -> false;
                      case "park" ->
                          throw new IllegalStateException(
                              "parking failed", new SQLException("value too long", "22001"));
                      default -> throw new UnsupportedOperationException(m.getName());
                    });
    DeliveryProcessor p = processor(deadLetters(l -> false, "-"), Optional.of(refusing));
    DeliveryProcessor.Incoming in =
        new DeliveryProcessor.Incoming(
            "orders", 0, 7, () -> M, new byte[] {'k'}, new byte[] {2}, List.of());

    assertThat(p.process(in, () -> true)).isTrue();

    assertThat(handled).hasValue(1);
    assertThat(stored)
        .singleElement()
        .satisfies(l -> {
          assertThat(l.classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
          assertThat(l.errorMessage()).isEqualTo("payments down");
        });
    assertThat(refusedCount).hasValue(1);
  }
}
