package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.time.FakeTime;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Store writes retried while the record is owned, on fake time: nothing here sleeps. */
class StoreRetryTest {

  private final FakeTime time = FakeTime.create();
  private final StoreRetry retry = new StoreRetry(time);
  private final AtomicInteger calls = new AtomicInteger();

  private static Duration total(FakeTime time) {
    return time.sleeps().stream().reduce(Duration.ZERO, Duration::plus);
  }

  @Test
  void retriesAFailingWriteWithBackoffUntilItSucceeds() {
    Optional<String> result =
        retry.untilDone(
            "writing",
            () -> true,
            () -> {
              if (calls.incrementAndGet() < 3) {
                throw new IllegalStateException("store down");
              }
              return "stored";
            });

    assertThat(result).contains("stored");
    assertThat(calls).hasValue(3);
    // two backoffs: 100 ms and 200 ms, each jittered by up to half, in slices of at most 50 ms
    assertThat(time.sleeps()).allMatch(s -> s.compareTo(Duration.ofMillis(50)) <= 0);
    assertThat(total(time)).isBetween(Duration.ofMillis(150), Duration.ofMillis(300));
  }

  @Test
  void givesUpAsSoonAsTheRecordIsNoLongerOwned() {
    long revokedAt = time.nanos() + Duration.ofSeconds(3).toNanos();

    Optional<Object> result =
        retry.untilDone(
            "writing",
            () -> time.nanos() < revokedAt,
            () -> {
              calls.incrementAndGet();
              throw new IllegalStateException("store down");
            });

    assertThat(result).isEmpty();
    assertThat(calls.get()).isGreaterThan(1);
    // it stopped within one slice of losing ownership
    assertThat(total(time)).isBetween(Duration.ofSeconds(3), Duration.ofMillis(3_050));
  }

  @Test
  void anInterruptedRetryGivesUpAndKeepsTheInterrupt() {
    Thread.currentThread().interrupt();
    try {
      Optional<Object> result =
          retry.untilDone(
              "writing",
              () -> true,
              () -> {
                throw new IllegalStateException("store down");
              });
      assertThat(result).isEmpty();
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void aPermanentRefusalIsNotRetried() {
    assertThatThrownBy(() ->
            retry.untilDone(
                "storing the dead letter",
                () -> true,
                () -> {
                  calls.incrementAndGet();
                  throw new IllegalStateException(
                      "insert failed",
                      new SQLException("invalid byte sequence for encoding UTF8: 0x00", "22021"));
                }))
        .isInstanceOfSatisfying(
            StoreRefused.class, e -> assertThat(e.sqlState()).isEqualTo("22021"))
        .hasMessageContaining("storing the dead letter was refused by the store for good");

    assertThat(calls).hasValue(1);
    assertThat(time.sleeps()).isEmpty();
  }

  @Test
  void aTransientSqlFailureIsRetried() {
    Optional<String> result =
        retry.untilDone(
            "writing",
            () -> true,
            () -> {
              if (calls.incrementAndGet() < 2) {
                throw new IllegalStateException(
                    "insert failed", new SQLException("deadlock detected", "40P01"));
              }
              return "stored";
            });

    assertThat(result).contains("stored");
    assertThat(calls).hasValue(2);
  }
}
