package dev.postbox.core.engine.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The publishing thread's loop on fake time, run on the test thread: the purge schedule, and no
 * claim once the leases are no longer surely valid. Waiting for work advances the fake time; the
 * loop stops after a set number of waits. Nothing sleeps.
 */
class PublishPipelineTest {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration POLL = Duration.ofSeconds(1);

  private final FakeTime time = FakeTime.create();
  private final long origin = time.nanos();

  @Test
  void anIdleRelayPurgesOncePerPurgeInterval() {
    EmptyStore store = new EmptyStore(95);
    LaneOwnership lanes = lanes(store, Duration.ofMinutes(10));
    lanes.heartbeat();
    pipeline(store, lanes, Duration.ZERO).run();
    assertThat(store.purges)
        .containsExactly(
            Duration.ZERO, Duration.ofSeconds(30), Duration.ofSeconds(60), Duration.ofSeconds(90));
  }

  @Test
  void noClaimOnceTheLeasesAreNoLongerSurelyValid() {
    EmptyStore store = new EmptyStore(12);
    LaneOwnership lanes = lanes(store, TTL); // not renewed: valid until 8 s
    lanes.heartbeat();
    pipeline(store, lanes, Duration.ZERO).run();
    assertThat(store.claims)
        .as("claims while valid, none from 4/5 of the TTL on")
        .allMatch(t -> t.compareTo(Duration.ofSeconds(8)) < 0)
        .contains(Duration.ofSeconds(7));
    assertThat(store.waits).as("it keeps waiting for work meanwhile").isEqualTo(12);
  }

  private LaneOwnership lanes(OneLaneMemoryStore store, Duration ttl) {
    return new LaneOwnership(
        "relay-1",
        "relay-1#test",
        store,
        ttl,
        ttl.dividedBy(4),
        time,
        time,
        RelayListener.NONE,
        () -> {});
  }

  @Test
  void aLullShorterThanTheIdleGraceIsPolledThroughWithoutAnIdleMark() {
    // rows every 3 ms: each lull is shorter than the 10 ms grace, so the relay never marks itself
    // idle (which would make every writer notify) and never waits for a notification
    TrickleStore store = new TrickleStore(List.of(0L, 3L, 6L, 9L, 12L, 15L));
    LaneOwnership lanes = lanes(store, Duration.ofMinutes(10));
    lanes.heartbeat();
    pipeline(store, lanes, Duration.ofMillis(10), new AckAll(), () -> store.waits < 1).run();
    assertThat(store.published).containsExactly(0L, 3L, 6L, 9L, 12L, 15L);
    assertThat(store.idleMarks)
        .as("busy from the first row; idle only once the last row is 10 ms old")
        .containsExactly(false, true);
    assertThat(store.idleMarkedAt)
        .as("1 + 2 + 4 + 4 ms of short polls after the last row, at 15 ms")
        .isEqualTo(Duration.ofMillis(26));
  }

  @Test
  void withoutAGraceTheRelayGoesIdleAtTheFirstEmptyClaim() {
    TrickleStore store = new TrickleStore(List.of(0L, 3L));
    LaneOwnership lanes = lanes(store, Duration.ofMinutes(10));
    lanes.heartbeat();
    pipeline(store, lanes, Duration.ZERO, new AckAll(), () -> store.waits < 1).run();
    assertThat(store.published).containsExactly(0L);
    assertThat(store.idleMarks).containsExactly(false, true);
    assertThat(store.idleMarkedAt).isEqualTo(Duration.ZERO);
  }

  private PublishPipeline pipeline(EmptyStore store, LaneOwnership lanes, Duration grace) {
    return pipeline(store, lanes, grace, new NoPublisher(), () -> store.waits < store.maxWaits);
  }

  private PublishPipeline pipeline(
      OneLaneMemoryStore store,
      LaneOwnership lanes,
      Duration grace,
      RelayPublisher publisher,
      java.util.function.BooleanSupplier running) {
    RelayEngine.Config config =
        new RelayEngine.Config(
            "relay-1",
            10,
            TTL,
            TTL.dividedBy(4),
            POLL,
            grace,
            Duration.ofHours(1),
            Duration.ofSeconds(30),
            Duration.ofSeconds(5),
            new Backoff(Duration.ofMillis(100), Duration.ofSeconds(30), 2, 0.5),
            time,
            RelayListener.NONE,
            PostboxMetrics.noop(),
            Duration.ofSeconds(60),
            UnpublishableRows.BLOCK_KEY,
            time,
            time);
    RelayMeters meters =
        new RelayMeters("relay-1", PostboxMetrics.noop(), Duration.ofSeconds(60), lanes::count);
    return new PublishPipeline(
        config, "relay-1#test", store, publisher, lanes, meters, RelayListener.NONE, running);
  }

  /**
   * One lane on the test's fake time: a wait for work advances it; nothing is ever marked failed.
   */
  private abstract class FakeTimeStore extends OneLaneMemoryStore {
    int waits;

    Duration now() {
      return Duration.ofNanos(time.nanos() - origin);
    }

    @Override
    public boolean awaitWork(Duration timeout) throws InterruptedException {
      waits++;
      time.sleep(timeout);
      return false;
    }

    @Override
    public int markFailed(
        String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String e) {
      throw new AssertionError("nothing fails here");
    }
  }

  /**
   * One lane; a row (position = its arrival, ms) becomes pending at each arrival time; records the
   * idle marks and when the first idle mark was written; a wait for work advances the time.
   */
  private final class TrickleStore extends FakeTimeStore {
    private final List<Long> arrivals;
    final List<Boolean> idleMarks = new ArrayList<>();
    Duration idleMarkedAt;

    TrickleStore(List<Long> arrivalsMs) {
      this.arrivals = new ArrayList<>(arrivalsMs);
    }

    @Override
    public synchronized List<OutboxRecord> claim(
        String instanceId,
        Collection<LaneLease> leases,
        int limit,
        java.util.Set<Long> exceptPositions) {
      while (!arrivals.isEmpty() && Duration.ofMillis(arrivals.get(0)).compareTo(now()) <= 0) {
        long at = arrivals.remove(0);
        pending.put(at, row(at, "k"));
      }
      return super.claim(instanceId, leases, limit, exceptPositions);
    }

    @Override
    public void markIdle(String instanceId, boolean idle) {
      idleMarks.add(idle);
      if (idle && idleMarkedAt == null) {
        idleMarkedAt = now();
      }
    }
  }

  /** Acknowledges every message at once. */
  private static final class AckAll implements RelayPublisher {
    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      return messages.stream().map(m -> (PublishOutcome) PublishOutcome.ACKNOWLEDGED).toList();
    }

    @Override
    public void close() {}
  }

  /** One lane, no rows: records when it claimed, purged and waited; a wait advances the time. */
  private final class EmptyStore extends FakeTimeStore {
    final int maxWaits;
    final List<Duration> claims = new ArrayList<>();
    final List<Duration> purges = new ArrayList<>();

    EmptyStore(int maxWaits) {
      this.maxWaits = maxWaits;
    }

    @Override
    public synchronized List<OutboxRecord> claim(
        String instanceId,
        Collection<LaneLease> leases,
        int limit,
        java.util.Set<Long> exceptPositions) {
      claims.add(now());
      return List.of();
    }

    @Override
    public int purgePublished(Collection<LaneLease> leases, Duration retention, int limit) {
      purges.add(now());
      return 0;
    }
  }

  /** A publisher that is never called (no rows). */
  private static final class NoPublisher implements RelayPublisher {
    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      throw new AssertionError("nothing to publish");
    }

    @Override
    public void close() {}
  }

  @Test
  void aSettlementSortsOutcomesAndRetriesNothingHeldBehindAnUnpublishableRow() {
    List<OutboxRecord> batch = List.of(row(1, "A"), row(2, "K"), row(3, "K"), row(4, "C"));
    RuntimeException tooLarge = new RuntimeException("too large");
    RuntimeException down = new RuntimeException("broker unavailable");
    Settlement s =
        Settlement.of(
            batch,
            List.of(
                PublishOutcome.ACKNOWLEDGED,
                new PublishOutcome.Failed(tooLarge, true),
                new PublishOutcome.Failed(down, false),
                new PublishOutcome.Failed(down, false)));
    assertThat(s.acked()).extracting(OutboxRecord::position).containsExactly(1L);
    assertThat(s.failures()).hasSize(3);
    assertThat(s.unpublishable()).extracting(f -> f.row().position()).containsExactly(2L);
    assertThat(s.retried()).as("row 3 waits behind row 2 of its key; row 4 is retried").isOne();
  }

  private static OutboxRecord row(long position, String key) {
    Message m = Message.builder("t", "x").key(key).jsonPayload("{}").build();
    return new OutboxRecord(position, 0, m, Instant.EPOCH, 0);
  }
}
