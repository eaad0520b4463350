package dev.postbox.core.time;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class FakeTimeTest {

  @Test
  void sleepingAdvancesTheTickerAndTheClockTogetherAndIsRecorded() throws InterruptedException {
    FakeTime time = FakeTime.startingAt(Instant.parse("2026-12-01T00:00:00Z"));
    long start = time.nanos();
    long deadline = time.deadlineIn(Duration.ofSeconds(3));

    time.sleep(Duration.ofSeconds(1));
    time.sleep(Duration.ofMillis(1500));
    assertThat(time.reached(deadline)).isFalse();
    time.advance(Duration.ofMillis(500));

    assertThat(time.reached(deadline)).isTrue();
    assertThat(time.elapsedSince(start)).isEqualTo(Duration.ofSeconds(3));
    assertThat(time.clock().instant()).isEqualTo(Instant.parse("2026-12-01T00:00:03Z"));
    assertThat(time.sleeps()).containsExactly(Duration.ofSeconds(1), Duration.ofMillis(1500));
  }

  @Test
  void timeNeverMovesBackAndAnInterruptedSleeperThrows() {
    FakeTime time = FakeTime.create();
    assertThatThrownBy(() -> time.advance(Duration.ofNanos(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> time.sleep(Duration.ofSeconds(1)))
        .isInstanceOf(InterruptedException.class);
    assertThat(time.nanos()).isZero();
  }
}
