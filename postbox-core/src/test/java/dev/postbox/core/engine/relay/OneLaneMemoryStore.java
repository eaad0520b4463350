package dev.postbox.core.engine.relay;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A relay store of one lane, always leased to whoever asks, in memory: the pending rows by
 * position, what was published, and the positions each claim was told to leave out. Subclasses say
 * which pending rows a claim may return and what a failure mark does. Thread-safe (synchronized).
 */
abstract class OneLaneMemoryStore implements RelayStore {
  final TreeMap<Long, OutboxRecord> pending = new TreeMap<>();
  final List<Long> published = new CopyOnWriteArrayList<>();
  final List<Set<Long>> claimsExcluding = new CopyOnWriteArrayList<>();

  /** Whether a claim may return {@code r} (the caller holds the monitor). */
  boolean claimable(OutboxRecord r) {
    return true;
  }

  @Override
  public int laneCount() {
    return 1;
  }

  @Override
  public int heartbeat(String instanceId, Duration ttl) {
    return 1;
  }

  @Override
  public List<LaneLease> renewLeases(String instanceId, Duration ttl) {
    return List.of(new LaneLease(0, 1));
  }

  @Override
  public List<LaneLease> acquireLeases(String instanceId, int max, Duration ttl) {
    return List.of();
  }

  @Override
  public void releaseLeases(String instanceId, Collection<LaneLease> leases) {}

  @Override
  public void unregister(String instanceId) {}

  @Override
  public synchronized List<OutboxRecord> claim(
      String instanceId, Collection<LaneLease> leases, int limit) {
    return claim(instanceId, leases, limit, Set.of());
  }

  @Override
  public synchronized List<OutboxRecord> claim(
      String instanceId, Collection<LaneLease> leases, int limit, Set<Long> exceptPositions) {
    if (!exceptPositions.isEmpty()) {
      claimsExcluding.add(Set.copyOf(exceptPositions));
    }
    List<OutboxRecord> out = new ArrayList<>();
    for (OutboxRecord r : pending.values()) {
      if (out.size() < limit && claimable(r) && !exceptPositions.contains(r.position())) {
        out.add(r);
      }
    }
    return out;
  }

  @Override
  public synchronized int markPublished(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, boolean d) {
    for (OutboxRecord r : records) {
      pending.remove(r.position());
      published.add(r.position());
    }
    return records.size();
  }

  @Override
  public int purgePublished(Collection<LaneLease> leases, Duration retention, int limit) {
    return 0;
  }

  @Override
  public boolean awaitWork(Duration timeout) throws InterruptedException {
    Thread.sleep(timeout);
    return false;
  }
}
