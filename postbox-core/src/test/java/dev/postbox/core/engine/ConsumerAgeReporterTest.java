package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The age report loop's schedule and failures, on fake time: it never sleeps for real. */
class ConsumerAgeReporterTest {

  private static final Duration INTERVAL = Duration.ofSeconds(5);
  private static final Instant T0 = Instant.parse("2026-03-01T10:00:00Z");

  private final FakeTime time = FakeTime.startingAt(T0);

  /** A store that records reports and fails the ones numbered in {@code failing} (from 0). */
  private static final class RecordingStore implements ConsumerAgeStore {
    final List<String> reports = new ArrayList<>();
    final List<Integer> failing;
    boolean forgetFails;
    int calls;

    RecordingStore(Integer... failing) {
      this.failing = List.of(failing);
    }

    @Override
    public void report(
        String subscription,
        String instance,
        Map<String, Optional<Instant>> oldestUnfinished,
        Instant now) {
      if (failing.contains(calls++)) {
        throw new IllegalStateException("database down");
      }
      reports.add(subscription + " " + instance + " " + oldestUnfinished + " at " + now);
    }

    @Override
    public void forget(String subscription, String instance) {
      if (forgetFails) {
        throw new IllegalStateException("database down");
      }
      reports.add("forget " + instance);
    }

    @Override
    public Map<String, Optional<Instant>> read(
        String subscription, Instant now, Duration staleAfter) {
      throw new UnsupportedOperationException();
    }
  }

  private ConsumerAgeReporter reporter(ConsumerAgeStore store, int sleeps) {
    return new ConsumerAgeReporter(
        store,
        "billing",
        "i1",
        () -> Map.of("billing.orders.0", Optional.of(T0)),
        time.clock(),
        INTERVAL,
        time,
        () -> time.sleeps().size() < sleeps);
  }

  @Test
  void reportsOnceEveryIntervalAtTheClocksTime() {
    RecordingStore store = new RecordingStore();
    reporter(store, 3).run();
    assertThat(store.reports)
        .containsExactly(
            "billing i1 {billing.orders.0=Optional[" + T0 + "]} at " + T0,
            "billing i1 {billing.orders.0=Optional[" + T0 + "]} at " + T0.plus(INTERVAL),
            "billing i1 {billing.orders.0=Optional["
                + T0
                + "]} at "
                + T0.plus(INTERVAL.multipliedBy(2)));
    assertThat(time.sleeps()).containsExactly(INTERVAL, INTERVAL, INTERVAL);
  }

  @Test
  void aFailedReportIsTriedAgainAfterTheIntervalAndAFailedForgetIsNotThrown() {
    RecordingStore store = new RecordingStore(0, 1);
    ConsumerAgeReporter r = reporter(store, 3);
    r.run();
    assertThat(store.reports)
        .as("the first two failed; the loop went on")
        .containsExactly(
            "billing i1 {billing.orders.0=Optional["
                + T0
                + "]} at "
                + T0.plus(INTERVAL.multipliedBy(2)));
    r.forget();
    assertThat(store.reports).last().isEqualTo("forget i1");
    store.forgetFails = true;
    assertThatCode(r::forget).doesNotThrowAnyException();
  }
}
