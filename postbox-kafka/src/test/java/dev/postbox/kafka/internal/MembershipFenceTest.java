package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MembershipFenceTest {

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final MembershipFence fence = new MembershipFence(Duration.ofSeconds(2), now::get);

  private void advance(Duration d) {
    now.addAndGet(d.toNanos());
  }

  @Test
  void regularPollsAndCommitsKeepTheMembershipFresh() {
    for (int i = 0; i < 100; i++) {
      advance(Duration.ofMillis(50));
      assertThat(fence.polled()).isFalse();
      assertThat(fence.fresh()).isTrue();
      if (fence.proofDue()) {
        fence.committed(); // the poll thread commits again when the proof is half the threshold old
      }
    }
  }

  @Test
  void pollsAndHeartbeatsWithoutASuccessfulCommitAreSuspectAfterTheThreshold() {
    // a group coordinator cut off from the other brokers answers heartbeats, but its commits never
    // complete: polls go on, heartbeats are young, and only the commits say something is wrong
    for (int i = 0; i < 40; i++) {
      advance(Duration.ofMillis(50));
      fence.heartbeatAge(Duration.ofMillis(100));
      assertThat(fence.polled()).isFalse();
    }
    assertThat(fence.proofDue()).isTrue();
    assertThat(fence.fresh()).as("2.0 s: not past the threshold yet").isTrue();
    advance(Duration.ofMillis(50));
    assertThat(fence.fresh()).as("2.05 s without a successful commit").isFalse();
    assertThat(fence.polled()).as("the poll thread must verify").isTrue();
    fence.committed();
    assertThat(fence.fresh()).as("a later commit does not clear the suspicion").isFalse();
    fence.verified();
    assertThat(fence.fresh()).isTrue();
  }

  @Test
  void aConsumerThatPollsButSendsNoHeartbeatIsSuspectUntilVerified() {
    fence.heartbeatAge(Duration.ofSeconds(1)); // below the threshold: nothing changes
    assertThat(fence.polled()).isFalse();
    assertThat(fence.fresh()).isTrue();
    advance(Duration.ofMillis(50));
    fence.heartbeatAge(Duration.ofSeconds(3)); // cut off from the coordinator, polls go on
    assertThat(fence.polled()).as("the poll thread must verify").isTrue();
    assertThat(fence.fresh()).isFalse();
    advance(Duration.ofMillis(50));
    assertThat(fence.polled()).as("still unverified").isTrue();
    fence.verified();
    assertThat(fence.fresh()).isTrue();
  }

  @Test
  void aWorkerResumedBeforeThePollThreadSeesAStaleMembership() {
    fence.polled();
    advance(Duration.ofSeconds(9)); // the whole process was stopped
    assertThat(fence.fresh()).isFalse();
    assertThat(fence.awaitFresh(() -> true))
        .isFalse(); // revoked meanwhile: the record never starts
  }

  @Test
  void aGapStaysSuspectUntilVerifiedEvenAfterLaterPolls() {
    fence.polled();
    advance(Duration.ofSeconds(9));
    assertThat(fence.polled()).isTrue();
    assertThat(fence.fresh()).isFalse();
    advance(Duration.ofMillis(50));
    assertThat(fence.polled()).as("still unverified").isTrue();
    assertThat(fence.fresh()).isFalse();
    fence.verified();
    assertThat(fence.fresh()).isTrue();
    advance(Duration.ofMillis(50));
    assertThat(fence.polled()).isFalse();
  }

  @Test
  void aWaitingWorkerProceedsOnceThePollThreadVerified() throws Exception {
    fence.polled();
    advance(Duration.ofSeconds(9));
    AtomicBoolean revoked = new AtomicBoolean();
    CompletableFuture<Boolean> worker =
        CompletableFuture.supplyAsync(() -> fence.awaitFresh(revoked::get));
    assertThat(fence.polled()).isTrue();
    assertThat(worker).isNotDone();
    fence.verified();
    assertThat(worker.get(10, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void aWaitingWorkerGivesUpWhenThePartitionIsRevoked() throws Exception {
    fence.polled();
    advance(Duration.ofSeconds(9));
    AtomicBoolean revoked = new AtomicBoolean();
    CompletableFuture<Boolean> worker =
        CompletableFuture.supplyAsync(() -> fence.awaitFresh(revoked::get));
    fence.polled(); // the commit that would verify failed: the member was fenced
    revoked.set(true); // the next poll lost the partition
    assertThat(worker.get(10, TimeUnit.SECONDS)).isFalse();
  }

  @Test
  void thresholdLeavesAHeartbeatIntervalOfTheSessionTimeout() {
    assertThat(MembershipFence.thresholdFor(Map.of())).isEqualTo(Duration.ofSeconds(21));
    assertThat(
            MembershipFence.thresholdFor(
                Map.of("session.timeout.ms", 6000, "heartbeat.interval.ms", "1500")))
        .isEqualTo(Duration.ofMillis(2250));
    assertThat(
            MembershipFence.thresholdFor(
                Map.of("session.timeout.ms", 100, "heartbeat.interval.ms", 90)))
        .isEqualTo(Duration.ofMillis(100));
    assertThatThrownBy(() -> new MembershipFence(Duration.ZERO, now::get))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
