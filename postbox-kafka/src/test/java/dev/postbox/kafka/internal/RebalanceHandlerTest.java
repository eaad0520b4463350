package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.engine.OffsetTracker;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** What a rebalance does to the subscriber's partitions, on Kafka's in-memory consumer. */
class RebalanceHandlerTest {

  private static final TopicPartition P0 = new TopicPartition("orders", 0);
  private static final TopicPartition P1 = new TopicPartition("orders", 1);

  /** Kafka's in-memory consumer that records the commits instead of making them. */
  private static final class RecordingConsumer extends MockConsumer<byte[], byte[]> {
    final List<Map<TopicPartition, OffsetAndMetadata>> commits = new ArrayList<>();

    RecordingConsumer() {
      super("earliest");
    }

    @Override
    public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
      commits.add(Map.copyOf(offsets));
    }

    @Override
    public synchronized void commitAsync(
        Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
      commits.add(Map.copyOf(offsets));
      callback.onComplete(offsets, null);
    }
  }

  private final FakeTime time = FakeTime.create();
  private final RecordingConsumer consumer = new RecordingConsumer();
  private final SubscriberPartitions partitions = new SubscriberPartitions();
  private final AtomicBoolean allPaused = new AtomicBoolean();

  private RebalanceHandler handler(boolean atMostOnce) {
    consumer.assign(List.of(P0, P1));
    OffsetCommitter committer =
        new OffsetCommitter(
            consumer,
            "inventory",
            atMostOnce,
            partitions.trackers(),
            new MembershipFence(Duration.ofSeconds(10), System::nanoTime));
    SubscriberGauges gauges =
        new SubscriberGauges(
            PostboxMetrics.noop(),
            "inventory",
            time.clock(),
            partitions::assignment,
            partitions.trackers());
    RebalanceHandler h =
        new RebalanceHandler(
            "inventory",
            Duration.ofSeconds(30),
            time,
            consumer,
            partitions,
            committer,
            allPaused::get,
            gauges);
    h.onPartitionsAssigned(List.of(P0, P1));
    return h;
  }

  /** Dispatches offsets 0..n-1 of {@code tp} and finishes the first {@code finished}. */
  private OffsetTracker ran(TopicPartition tp, int n, int finished) {
    OffsetTracker t = partitions.trackerFor(tp);
    for (int o = 0; o < n; o++) {
      t.dispatched(o);
    }
    for (int o = 0; o < finished; o++) {
      assertThat(t.tryStart()).isTrue();
      t.ended(o, true);
    }
    return t;
  }

  @Test
  void aRevokedPartitionStopsStartingRecordsCommitsItsFinishedPrefixAndIsForgotten() {
    RebalanceHandler h = handler(false);
    OffsetTracker t0 = ran(P0, 5, 3);
    ran(P1, 2, 2);

    consumer.assign(List.of(P1)); // what the consumer holds once the callback returned
    h.onPartitionsRevoked(List.of(P0));

    assertThat(t0.tryStart()).as("an unstarted record of a revoked partition").isFalse();
    assertThat(consumer.commits).containsExactly(Map.of(P0, new OffsetAndMetadata(3)));
    assertThat(partitions.tracker(P0)).isEmpty();
    assertThat(partitions.tracker(P1)).isPresent();
    assertThat(partitions.assignment()).containsExactly(P1);
    assertThat(time.sleeps()).as("nothing was running: no wait").isEmpty();
  }

  @Test
  void aLostPartitionIsForgottenWithoutACommit() {
    RebalanceHandler h = handler(false);
    OffsetTracker t0 = ran(P0, 5, 3);

    consumer.assign(List.of(P1));
    h.onPartitionsLost(List.of(P0));

    assertThat(t0.tryStart()).isFalse();
    assertThat(consumer.commits).as("another member may own it already").isEmpty();
    assertThat(partitions.tracker(P0)).isEmpty();
    assertThat(partitions.assignment()).containsExactly(P1);
  }

  @Test
  void atMostOnceCommitsNothingAtRevocation() {
    RebalanceHandler h = handler(true);
    ran(P0, 5, 3);
    h.onPartitionsRevoked(List.of(P0));
    assertThat(consumer.commits).isEmpty();
  }

  @Test
  void partitionsAssignedWhileReadingIsPausedArePausedToo() {
    RebalanceHandler h = handler(false);
    assertThat(consumer.paused()).isEmpty();
    allPaused.set(true);
    h.onPartitionsAssigned(List.of(P1));
    assertThat(consumer.paused()).containsExactly(P1);
    assertThat(partitions.assignment()).containsExactlyInAnyOrder(P0, P1);
  }
}
