package dev.postbox.core.engine.relay;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The lease table of several relays on fake time, as the PostgreSQL store keeps it: instances live
 * while seen within the TTL, leases to now + TTL, a lane taken when free or expired under a new
 * epoch, a release fenced by owner and epoch. Records every change of a lane's owner and every
 * heartbeat. Claims and marks are not supported. Thread-safe (synchronized).
 */
final class SharedLeaseTable implements RelayStore {

  /** A lane taken ({@code owner} set) or given up ({@code owner} null) at {@code at}. */
  record Move(Duration at, int lane, String owner) {}

  /** A heartbeat of {@code owner} at {@code at}. */
  record Beat(Duration at, String owner) {}

  private record Lease(String owner, long epoch, long until) {}

  private final FakeTime time;
  private final long origin;
  private final Lease[] lanes;
  private final Map<String, Long> seen = new HashMap<>();
  private final List<Move> moves = new ArrayList<>();
  private final List<Beat> beats = new ArrayList<>();

  SharedLeaseTable(FakeTime time, int laneCount) {
    this.time = time;
    this.origin = time.nanos();
    this.lanes = new Lease[laneCount];
    for (int i = 0; i < laneCount; i++) {
      lanes[i] = new Lease(null, 0, Long.MIN_VALUE);
    }
  }

  private Duration now() {
    return Duration.ofNanos(time.nanos() - origin);
  }

  /** How many lanes {@code owner} holds now. */
  synchronized int held(String owner) {
    int n = 0;
    for (Lease l : lanes) {
      if (owner.equals(l.owner()) && l.until() > time.nanos()) {
        n++;
      }
    }
    return n;
  }

  synchronized List<Move> moves() {
    return List.copyOf(moves);
  }

  synchronized List<Beat> beats() {
    return List.copyOf(beats);
  }

  @Override
  public int laneCount() {
    return lanes.length;
  }

  @Override
  public synchronized int heartbeat(String instanceId, Duration ttl) {
    beats.add(new Beat(now(), instanceId));
    seen.put(instanceId, time.nanos());
    long live = seen.values().stream().filter(s -> s >= time.nanos() - ttl.toNanos()).count();
    return (int) Math.max(1, live);
  }

  @Override
  public synchronized List<LaneLease> renewLeases(String instanceId, Duration ttl) {
    List<LaneLease> mine = new ArrayList<>();
    for (int i = 0; i < lanes.length; i++) {
      if (instanceId.equals(lanes[i].owner())) {
        lanes[i] = new Lease(instanceId, lanes[i].epoch(), time.nanos() + ttl.toNanos());
        mine.add(new LaneLease(i, lanes[i].epoch()));
      }
    }
    return mine;
  }

  @Override
  public synchronized List<LaneLease> acquireLeases(String instanceId, int max, Duration ttl) {
    List<LaneLease> got = new ArrayList<>();
    for (int i = 0; i < lanes.length && got.size() < max; i++) {
      if (lanes[i].owner() == null || lanes[i].until() <= time.nanos()) {
        lanes[i] = new Lease(instanceId, lanes[i].epoch() + 1, time.nanos() + ttl.toNanos());
        got.add(new LaneLease(i, lanes[i].epoch()));
        moves.add(new Move(now(), i, instanceId));
      }
    }
    return got;
  }

  @Override
  public synchronized void releaseLeases(String instanceId, Collection<LaneLease> leases) {
    for (LaneLease l : leases) {
      Lease was = lanes[l.lane()];
      if (instanceId.equals(was.owner()) && was.epoch() == l.epoch()) {
        lanes[l.lane()] = new Lease(null, was.epoch(), Long.MIN_VALUE);
        moves.add(new Move(now(), l.lane(), null));
      }
    }
  }

  @Override
  public synchronized void unregister(String instanceId) {
    for (int i = 0; i < lanes.length; i++) {
      if (instanceId.equals(lanes[i].owner())) {
        lanes[i] = new Lease(null, lanes[i].epoch(), Long.MIN_VALUE);
        moves.add(new Move(now(), i, null));
      }
    }
    seen.remove(instanceId);
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
