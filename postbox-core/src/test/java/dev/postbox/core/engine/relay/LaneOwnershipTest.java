package dev.postbox.core.engine.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Lane ownership on fake time: when the relay stops trusting its leases, the heartbeat's schedule,
 * and the fair share. Nothing sleeps; every instant is set by the test.
 */
class LaneOwnershipTest {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration INTERVAL = TTL.dividedBy(4);

  private final FakeTime time = FakeTime.create();
  private final LeaseTable store = new LeaseTable(time, 4);
  private final List<Set<Integer>> lanesChanged = new ArrayList<>();
  private int samples;

  private LaneOwnership ownership() {
    return new LaneOwnership(
        "relay-1",
        "relay-1#test",
        store,
        TTL,
        INTERVAL,
        time,
        time,
        new RelayListener() {
          @Override
          public void onLanesChanged(Set<Integer> lanes) {
            lanesChanged.add(lanes);
          }
        },
        () -> samples++);
  }

  @Test
  void aLeaseNotRenewedInTimeIsTreatedAsLostBeforeTheStoreLetsItGo() {
    LaneOwnership lanes = ownership();
    lanes.heartbeat();
    assertThat(lanes.lanes()).containsExactly(0, 1, 2, 3);
    long storeExpiry = store.leaseUntil;

    store.down = true; // renewals fail from now on
    time.advance(Duration.ofMillis(7_999));
    lanes.heartbeat();
    assertThat(lanes.valid()).as("within 4/5 of the TTL").isTrue();

    time.advance(Duration.ofMillis(1));
    assertThat(lanes.valid()).as("at 4/5 of the TTL the relay stops trusting its leases").isFalse();
    assertThat(time.nanos() - storeExpiry)
        .as("while the store still holds them for another fifth of the TTL")
        .isEqualTo(-TTL.dividedBy(5).toNanos());
    assertThat(lanes.lanes()).as("still owned, but not to be published on").hasSize(4);
  }

  @Test
  void validityCountsFromBeforeTheStoreCallSoASlowRenewalDoesNotExtendIt() {
    store.renewTakes = Duration.ofSeconds(3);
    LaneOwnership lanes = ownership();
    long t0 = time.nanos();
    lanes.heartbeat();
    assertThat(lanes.current().validUntilNanos()).isEqualTo(t0 + Duration.ofSeconds(8).toNanos());
    assertThat(store.leaseUntil).isEqualTo(t0 + Duration.ofSeconds(13).toNanos());
  }

  @Test
  void afterStartTheHeartbeatBeatsOftenWhileTheShareSettlesThenOnceEveryInterval() {
    LaneOwnership lanes = ownership();
    lanes.heartbeat(); // at start: the live instances changed (none known before)
    store.beforeBeat =
        () -> assertThat(lanes.valid()).as("valid when the next beat comes").isTrue();

    lanes.heartbeatLoop(() -> store.beats.size() < 44);

    Duration step = INTERVAL.dividedBy(LaneOwnership.SETTLING_BEATS_PER_INTERVAL);
    List<Duration> expected = new ArrayList<>();
    for (int i = 0; i <= 2 * LaneOwnership.SETTLING_BEATS_PER_INTERVAL; i++) {
      expected.add(step.multipliedBy(i)); // 0 to 5 s every 125 ms
    }
    expected.addAll(
        List.of(Duration.ofMillis(7_500), Duration.ofMillis(10_000), Duration.ofMillis(12_500)));
    assertThat(store.beats).containsExactlyElementsOf(expected);
    assertThat(time.sleeps()).endsWith(INTERVAL, INTERVAL, INTERVAL);
    assertThat(samples)
        .as("the backlog is sampled once per interval (0, 2.5, 5, 7.5, 10, 12.5 s)")
        .isEqualTo(6);
  }

  @Test
  void aChangeInTheLiveInstancesStartsAnotherSettlingThenTheIntervalAgain() {
    LaneOwnership lanes = ownership();
    lanes.heartbeat();
    time.advance(Duration.ofSeconds(20));
    lanes.heartbeat();
    assertThat(lanes.nextBeatIn()).as("settled: same live count").isEqualTo(INTERVAL);

    store.live = 2;
    time.advance(INTERVAL);
    lanes.heartbeat();
    Duration step = INTERVAL.dividedBy(LaneOwnership.SETTLING_BEATS_PER_INTERVAL);
    assertThat(lanes.nextBeatIn()).isEqualTo(step);
    time.advance(INTERVAL.multipliedBy(LaneOwnership.SETTLING_INTERVALS).minus(step));
    lanes.heartbeat();
    assertThat(lanes.nextBeatIn()).as("the last settling step").isEqualTo(step);
    time.advance(step);
    lanes.heartbeat();
    assertThat(lanes.nextBeatIn()).isEqualTo(INTERVAL);
  }

  @Test
  void theHeartbeatLoopStopsWhenInterrupted() {
    LaneOwnership lanes = ownership();
    Thread.currentThread().interrupt();
    lanes.heartbeatLoop(() -> true);
    assertThat(store.beats).isEmpty();
  }

  @Test
  void aFailedHeartbeatIsRetriedAtTheNextOne() {
    LaneOwnership lanes = ownership();
    store.down = true;
    lanes.heartbeat();
    assertThat(lanes.lanes()).isEmpty();
    assertThat(lanes.valid()).isFalse();
    store.down = false;
    time.advance(INTERVAL);
    lanes.heartbeat();
    assertThat(lanes.lanes()).containsExactly(0, 1, 2, 3);
    assertThat(lanes.valid()).isTrue();
  }

  @Test
  void aNewInstanceMakesTheOwnerReleaseLanesAboveItsFairShareBetweenBatches() {
    LaneOwnership lanes = ownership();
    lanes.heartbeat();
    assertThat(lanes.lanes()).containsExactly(0, 1, 2, 3);

    store.live = 2; // fair share ceil(4 / 2) = 2
    time.advance(INTERVAL);
    lanes.heartbeat();
    assertThat(lanes.releasePending()).isTrue();
    assertThat(lanes.lanes()).as("kept until the publishing thread releases").hasSize(4);

    lanes.applyReleases();
    assertThat(lanes.releasePending()).isFalse();
    assertThat(lanes.lanes()).containsExactly(0, 1);
    assertThat(store.owned).containsOnlyKeys(0, 1);
    assertThat(lanesChanged).containsExactly(Set.of(0, 1, 2, 3), Set.of(0, 1));
  }

  @Test
  void anInstanceBelowItsFairShareAcquiresFreeLanes() {
    store.live = 2;
    LaneOwnership lanes = ownership();
    lanes.heartbeat();
    assertThat(lanes.lanes()).containsExactly(0, 1);
    store.live = 1;
    time.advance(INTERVAL);
    lanes.heartbeat();
    assertThat(lanes.lanes()).containsExactly(0, 1, 2, 3);
  }

  @Test
  void releaseAllUnregistersAndOwnsNothing() {
    LaneOwnership lanes = ownership();
    lanes.heartbeat();
    lanes.releaseAll();
    assertThat(lanes.lanes()).isEmpty();
    assertThat(lanes.valid()).isFalse();
    assertThat(store.owned).isEmpty();
  }

  /**
   * A lease table on fake time: every lane free or this instance's; leases extended to now + TTL; a
   * renewal may take time; the store may be down. Not thread-safe (one test thread).
   */
  static final class LeaseTable implements RelayStore {
    private final FakeTime time;
    private final int laneCount;
    final TreeMap<Integer, LaneLease> owned = new TreeMap<>();
    final List<Duration> beats = new ArrayList<>();
    long leaseUntil = Long.MIN_VALUE;
    int live = 1;
    boolean down;
    Duration renewTakes = Duration.ZERO;
    Runnable beforeBeat = () -> {};
    private final long origin;

    LeaseTable(FakeTime time, int laneCount) {
      this.time = time;
      this.laneCount = laneCount;
      this.origin = time.nanos();
    }

    @Override
    public int laneCount() {
      return laneCount;
    }

    @Override
    public int heartbeat(String instanceId, Duration ttl) {
      beforeBeat.run();
      beats.add(Duration.ofNanos(time.nanos() - origin));
      if (down) {
        throw new IllegalStateException("database down");
      }
      return live;
    }

    @Override
    public List<LaneLease> renewLeases(String instanceId, Duration ttl) {
      time.advance(renewTakes);
      leaseUntil = time.nanos() + ttl.toNanos();
      return List.copyOf(owned.values());
    }

    @Override
    public List<LaneLease> acquireLeases(String instanceId, int max, Duration ttl) {
      List<LaneLease> got = new ArrayList<>();
      for (int lane = 0; lane < laneCount && got.size() < max; lane++) {
        if (!owned.containsKey(lane)) {
          LaneLease l = new LaneLease(lane, 1);
          owned.put(lane, l);
          got.add(l);
        }
      }
      leaseUntil = time.nanos() + ttl.toNanos();
      return got;
    }

    @Override
    public void releaseLeases(String instanceId, Collection<LaneLease> leases) {
      leases.forEach(l -> owned.remove(l.lane()));
    }

    @Override
    public void unregister(String instanceId) {
      owned.clear();
    }

    @Override
    public List<OutboxRecord> claim(String instanceId, Collection<LaneLease> leases, int limit) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int markPublished(
        String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, boolean d) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int markFailed(
        String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String e) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int purgePublished(Collection<LaneLease> leases, Duration retention, int limit) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean awaitWork(Duration timeout) {
      throw new UnsupportedOperationException();
    }
  }
}
