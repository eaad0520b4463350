package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InFlightLimitTest {

  @Test
  void fullAtTheLimitAndResumableAtHalfOfIt() {
    InFlightLimit limit = new InFlightLimit(10);
    limit.dispatched(9);
    assertThat(limit.full()).isFalse();
    assertThat(limit.resumable()).isFalse();
    limit.dispatched(1);
    assertThat(limit.full()).isTrue();
    limit.finished(4);
    assertThat(limit.get()).isEqualTo(6);
    assertThat(limit.resumable()).isFalse();
    limit.finished(1);
    assertThat(limit.resumable()).isTrue();
  }

  @Test
  void awaitReturnsAtOnceWhenThereIsRoomAndReportsNoRoomAfterTheTimeout() {
    InFlightLimit limit = new InFlightLimit(10);
    assertThat(limit.awaitResumable(Duration.ofDays(1))).isTrue();
    limit.dispatched(10);
    assertThat(limit.awaitResumable(Duration.ofMillis(1))).isFalse();
  }

  @Test
  void theWorkerThatMakesRoomWakesTheWaitingPollThread() throws Exception {
    InFlightLimit limit = new InFlightLimit(100);
    limit.dispatched(100);
    CountDownLatch waiting = new CountDownLatch(1);
    CompletableFuture<Boolean> woken =
        CompletableFuture.supplyAsync(() -> {
          waiting.countDown();
          return limit.awaitResumable(Duration.ofDays(1)); // only a signal ends this wait
        });
    waiting.await();
    limit.finished(30); // 70 left: no room yet
    limit.finished(30); // 40 left, crosses 50 in one step (a batch): must wake the waiter
    assertThat(woken.get(30, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void rejectsANonPositiveLimit() {
    assertThatThrownBy(() -> new InFlightLimit(0)).isInstanceOf(IllegalArgumentException.class);
  }
}
