package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.engine.OffsetTracker;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * The committer's decisions (what to commit, when the membership fence opens), on Kafka's in-memory
 * consumer and fake time: no broker, no sleeping.
 */
class OffsetCommitterTest {

  private static final TopicPartition P0 = new TopicPartition("orders", 0);
  private static final TopicPartition P1 = new TopicPartition("orders", 1);

  /**
   * Kafka's in-memory consumer that records every commit (and does nothing else with it) and can
   * fail the next synchronous one.
   */
  private static final class RecordingConsumer extends MockConsumer<byte[], byte[]> {
    final List<Map<TopicPartition, OffsetAndMetadata>> commits = new ArrayList<>();
    final AtomicReference<RuntimeException> failNextSync = new AtomicReference<>();
    // while set, every asynchronous commit completes with this error
    final AtomicReference<RuntimeException> failAsync = new AtomicReference<>();

    RecordingConsumer() {
      super("earliest");
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
      RuntimeException e = failNextSync.getAndSet(null);
      if (e != null) {
        throw e;
      }
      commits.add(Map.copyOf(offsets));
    }

    @Override
    public synchronized void commitAsync(
        Map<TopicPartition, OffsetAndMetadata> offsets,
        org.apache.kafka.clients.consumer.OffsetCommitCallback callback) {
      commits.add(Map.copyOf(offsets));
      callback.onComplete(offsets, failAsync.get());
    }
  }

  private final FakeTime time = FakeTime.create();
  private final RecordingConsumer consumer = new RecordingConsumer();
  private final Map<TopicPartition, OffsetTracker> trackers = new ConcurrentHashMap<>();
  private final MembershipFence fence =
      new MembershipFence("orders-group", Duration.ofSeconds(1), time::nanos);

  private OffsetCommitter committer(boolean atMostOnce) {
    consumer.assign(List.of(P0, P1));
    consumer.updateBeginningOffsets(Map.of(P0, 0L, P1, 0L));
    consumer.seek(P1, 40); // nothing dispatched from P1: its fetch position is what is safe
    return new OffsetCommitter(consumer, "orders-group", atMostOnce, trackers, fence);
  }

  /** Dispatches {@code offsets} of {@code tp} and finishes those in {@code finished}. */
  private void ran(TopicPartition tp, List<Long> offsets, Set<Long> finished) {
    OffsetTracker t = trackers.computeIfAbsent(tp, k -> new OffsetTracker());
    offsets.forEach(t::dispatched);
    for (long o : offsets) {
      if (finished.contains(o)) {
        assertThat(t.tryStart()).isTrue();
        t.ended(o, true);
      }
    }
  }

  /** The fence after a stall of the poll loop longer than its threshold. */
  private void stall() {
    fence.started();
    time.advance(Duration.ofSeconds(5));
    assertThat(fence.polled()).as("the gap must be verified").isTrue();
    assertThat(fence.fenced()).isTrue();
  }

  @Test
  void commitsOnlyTheFinishedPrefixAndOnlyWhenItAdvanced() {
    OffsetCommitter c = committer(false);
    ran(P0, List.of(10L, 11L, 12L), Set.of(10L, 12L)); // 11 still running
    c.commitFinished(false);
    assertThat(consumer.commits).containsExactly(Map.of(P0, new OffsetAndMetadata(11)));

    c.commitFinished(false);
    assertThat(consumer.commits).as("nothing advanced: no commit").hasSize(1);

    OffsetTracker t = trackers.get(P0);
    assertThat(t.tryStart()).isTrue();
    t.ended(11, true);
    c.commitFinished(true);
    assertThat(consumer.commits).last().isEqualTo(Map.of(P0, new OffsetAndMetadata(13)));
  }

  @Test
  void aFailedSyncCommitIsForgottenAndRetriedWithTheNextCommit() {
    OffsetCommitter c = committer(false);
    ran(P0, List.of(10L), Set.of(10L));
    consumer.failNextSync.set(new CommitFailedException("generation gone"));
    c.commitFinished(true);
    assertThat(consumer.commits).isEmpty();

    c.commitFinished(true);
    assertThat(consumer.commits).containsExactly(Map.of(P0, new OffsetAndMetadata(11)));
  }

  @Test
  void aForgottenPartitionIsCommittedAgainWhenItComesBack() {
    OffsetCommitter c = committer(false);
    ran(P0, List.of(10L), Set.of(10L));
    c.commitFinished(false);
    c.forget(List.of(P0));
    c.commitFinished(false);
    assertThat(consumer.commits).hasSize(2);
  }

  @Test
  void aStalledPollLoopIsProvedByACommitOfSafeOffsetsAndTheFenceOpens() {
    OffsetCommitter c = committer(false);
    ran(P0, List.of(10L, 11L), Set.of(10L)); // 11 unfinished: 11 is safe
    stall();

    c.verifyMembership();

    assertThat(consumer.commits)
        .containsExactly(Map.of(P0, new OffsetAndMetadata(11), P1, new OffsetAndMetadata(40)));
    assertThat(fence.fresh()).isTrue();
    c.commitFinished(false);
    assertThat(consumer.commits).as("the proof's offsets count as committed").hasSize(1);
  }

  @Test
  void aRejectedProofKeepsTheFenceShutUntilOneSucceeds() {
    OffsetCommitter c = committer(false);
    stall();
    consumer.failNextSync.set(new CommitFailedException("member of an old generation"));

    c.verifyMembership();
    assertThat(fence.fenced()).as("a zombie's workers keep waiting").isTrue();
    assertThat(fence.awaitFresh(() -> true)).as("revoked meanwhile: never starts").isFalse();

    time.advance(Duration.ofMillis(50));
    assertThat(fence.polled()).as("still to verify").isTrue();
    c.verifyMembership();
    assertThat(fence.fresh()).isTrue();
  }

  @Test
  void atMostOnceNeverCommitsAndOpensTheFenceWithoutAProof() {
    OffsetCommitter c = committer(true);
    ran(P0, List.of(10L), Set.of(10L));
    c.commitFinished(true);
    c.commit(Map.of(P0, new OffsetAndMetadata(11)), true);
    stall();

    c.verifyMembership();

    assertThat(consumer.commits).isEmpty();
    assertThat(fence.fresh()).isTrue();
  }

  @Test
  void anIdleMemberProvesItsMembershipAgainBeforeTheFenceWouldShut() {
    OffsetCommitter c = committer(false);
    ran(P0, List.of(10L, 11L), Set.of(10L)); // 11 unfinished: 11 is safe
    c.proveMembership();
    assertThat(consumer.commits).as("the start was proof enough").isEmpty();

    time.advance(Duration.ofMillis(600)); // past half the 1 s threshold, nothing new to commit
    assertThat(fence.polled()).isFalse();
    c.proveMembership();

    assertThat(consumer.commits)
        .containsExactly(Map.of(P0, new OffsetAndMetadata(11), P1, new OffsetAndMetadata(40)));
    time.advance(Duration.ofMillis(600)); // 1.2 s after the start, 0.6 s after the proof
    assertThat(fence.polled()).isFalse();
    assertThat(fence.fresh()).isTrue();
  }

  @Test
  void aMemberWhoseCommitsStopSucceedingIsFencedAfterTheThreshold() {
    // a group coordinator cut off from the other brokers answers heartbeats but can acknowledge
    // no commit: the proof fails and ages
    OffsetCommitter c = committer(false);
    consumer.failAsync.set(new org.apache.kafka.common.errors.TimeoutException("not acknowledged"));
    ran(P0, List.of(10L), Set.of(10L));
    c.commitFinished(false);
    assertThat(fence.fresh()).isTrue();

    time.advance(Duration.ofMillis(600));
    assertThat(fence.polled()).isFalse();
    c.proveMembership();
    assertThat(consumer.commits).as("the finished prefix, then the proof").hasSize(2);
    assertThat(fence.fresh()).as("0.6 s since the start: not yet").isTrue();
    time.advance(Duration.ofMillis(500)); // the last poll 0.5 s ago: only the proof is too old
    assertThat(fence.fresh()).as("no commit succeeded for 1.1 s").isFalse();
    assertThat(fence.polled()).as("the poll thread must verify").isTrue();
  }

  @Test
  void atMostOnceProvesItsMembershipWithoutACommit() {
    OffsetCommitter c = committer(true);
    time.advance(Duration.ofMillis(600));
    assertThat(fence.polled()).isFalse();
    c.proveMembership();
    time.advance(Duration.ofMillis(600));
    assertThat(consumer.commits).isEmpty();
    assertThat(fence.polled()).isFalse();
    assertThat(fence.fresh()).isTrue();
  }
}
