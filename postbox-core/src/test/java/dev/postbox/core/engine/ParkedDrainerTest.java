package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.ToIntFunction;
import org.junit.jupiter.api.Test;

/** The unpark loop's schedule, on fake time: it never sleeps for real. */
class ParkedDrainerTest {

  private final FakeTime time = FakeTime.create();

  /** Answers from a script: the number of parked records retried, or null for a failure. */
  private static ToIntFunction<BooleanSupplier> scripted(Integer... retried) {
    Deque<Integer> answers = new ArrayDeque<>(List.of(retried));
    return running -> {
      Integer n = answers.poll();
      if (n == null || n < 0) {
        throw new IllegalStateException("parking store down");
      }
      return n;
    };
  }

  private BooleanSupplier untilSlept(int sleeps) {
    return () -> time.sleeps().size() < sleeps;
  }

  @Test
  void aRoundThatFoundNothingDueWaits200MsABusyOneGoesOnAtOnce() {
    AtomicInteger rounds = new AtomicInteger();
    ToIntFunction<BooleanSupplier> drain = scripted(3, 0, 2, 1, 0);
    new ParkedDrainer(
            "inventory",
            running -> {
              rounds.incrementAndGet();
              return drain.applyAsInt(running);
            },
            time,
            untilSlept(2))
        .run();
    assertThat(rounds).hasValue(5);
    assertThat(time.sleeps()).containsExactly(Duration.ofMillis(200), Duration.ofMillis(200));
  }

  @Test
  void aFailedRoundIsRetriedAfterOneSecond() {
    new ParkedDrainer("inventory", scripted(-1, 0), time, untilSlept(2)).run();
    assertThat(time.sleeps()).containsExactly(Duration.ofSeconds(1), Duration.ofMillis(200));
  }

  @Test
  void theDrainSeesTheSubscribersRunningFlag() {
    BooleanSupplier running = untilSlept(1);
    new ParkedDrainer(
            "inventory",
            given -> {
              assertThat(given).isSameAs(running);
              return 0;
            },
            time,
            running)
        .run();
    assertThat(time.sleeps()).hasSize(1);
  }

  @Test
  void anInterruptWhileIdleEndsTheLoop() {
    Thread.currentThread().interrupt();
    new ParkedDrainer("inventory", scripted(0, 0, 0), time, () -> true).run();
    assertThat(time.sleeps()).isEmpty();
  }
}
