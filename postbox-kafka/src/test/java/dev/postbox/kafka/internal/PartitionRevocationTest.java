package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.engine.OffsetTracker;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Issue 13 #4: revocation marks every partition first, then waits once against one deadline. */
class PartitionRevocationTest {

  private final AtomicLong now = new AtomicLong(5_000_000_000L);

  /** Three partitions, each with one record running (a slow handler) and one not started yet. */
  private Map<TopicPartition, OffsetTracker> busyPartitions() {
    Map<TopicPartition, OffsetTracker> trackers = new LinkedHashMap<>();
    for (int p = 0; p < 3; p++) {
      OffsetTracker t = new OffsetTracker();
      t.dispatched(0);
      t.dispatched(1);
      assertThat(t.tryStart()).isTrue(); // offset 0 runs and does not end
      trackers.put(new TopicPartition("orders", p), t);
    }
    return trackers;
  }

  @Test
  void noRecordOfAnyRevokedPartitionStartsOnceTheRevocationBegan() throws Exception {
    Map<TopicPartition, OffsetTracker> trackers = busyPartitions();
    PartitionRevocation revocation = new PartitionRevocation(Duration.ofSeconds(30), now::get);
    CompletableFuture<Map<TopicPartition, Integer>> done =
        CompletableFuture.supplyAsync(() -> {
          try {
            return revocation.revoke(trackers);
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        });
    // the revocation is waiting for partition 0's running record: the other partitions are
    // marked already, so their next records never start
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> trackers.values().stream().allMatch(OffsetTracker::revoked));
    for (OffsetTracker t : trackers.values()) {
      assertThat(t.tryStart()).as("a record not started before the revocation").isFalse();
    }
    assertThat(done).isNotDone();
    trackers.values().forEach(t -> t.ended(0, true));
    assertThat(done.get(10, TimeUnit.SECONDS)).isEmpty();
    trackers.values().forEach(t -> assertThat(t.committable()).hasValue(1));
  }

  @Test
  void slowRecordsOnEveryPartitionAreWaitedForAgainstOneDeadline() throws Exception {
    Map<TopicPartition, OffsetTracker> trackers = busyPartitions();
    PartitionRevocation revocation = new PartitionRevocation(Duration.ofSeconds(30), now::get);
    CompletableFuture<Map<TopicPartition, Integer>> done =
        CompletableFuture.supplyAsync(() -> {
          try {
            return revocation.revoke(trackers);
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
        });
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> trackers.values().stream().allMatch(OffsetTracker::revoked));
    now.addAndGet(Duration.ofSeconds(29).toNanos());
    assertThat(done).isNotDone();
    // one timeout in all (not one per partition): the records still run, the wait is over
    now.addAndGet(Duration.ofSeconds(1).toNanos() + 1);
    assertThat(done.get(10, TimeUnit.SECONDS))
        .containsOnlyKeys(trackers.keySet())
        .allSatisfy((tp, left) -> assertThat(left).isEqualTo(1));
  }
}
