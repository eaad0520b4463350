package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** Revocation's wait for running records, on fake time: nothing here sleeps. */
class OffsetTrackerTimeTest {

  private final FakeTime time = FakeTime.create();
  private final OffsetTracker tracker = new OffsetTracker(time, time);

  @Test
  void revocationGivesUpWaitingForARunningRecordAtItsDeadline() throws InterruptedException {
    tracker.dispatched(5);
    tracker.dispatched(6);
    assertThat(tracker.tryStart()).isTrue();

    assertThat(tracker.revokeAndAwait(Duration.ofSeconds(30))).isEqualTo(1);

    assertThat(time.sleeps().stream().reduce(Duration.ZERO, Duration::plus))
        .isEqualTo(Duration.ofSeconds(30));
    assertThat(time.sleeps()).allMatch(s -> s.compareTo(Duration.ofMillis(100)) <= 0);
    assertThat(tracker.tryStart()).as("records not started do not start").isFalse();
    assertThat(tracker.committable()).isEqualTo(OptionalLong.of(5));
  }

  @Test
  void revocationWithNothingRunningDoesNotWait() throws InterruptedException {
    tracker.dispatched(5);
    assertThat(tracker.tryStart()).isTrue();
    tracker.ended(5, true);

    assertThat(tracker.revokeAndAwait(Duration.ofSeconds(30))).isZero();

    assertThat(time.sleeps()).isEmpty();
    assertThat(tracker.committable()).isEqualTo(OptionalLong.of(6));
  }
}
