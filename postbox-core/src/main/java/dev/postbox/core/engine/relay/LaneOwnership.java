package dev.postbox.core.engine.relay;

import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lanes one relay owns: the heartbeat that registers the instance, renews its leases, takes
 * lanes up to the fair share and <em>requests</em> the release of lanes above it; the releases,
 * performed by the publishing thread between batches (so a lane is never handed over while one of
 * its rows is in flight); and the local deadline before which the leases are surely valid.
 *
 * <p>After the number of live instances changes (its own start included), the heartbeat beats
 * {@link #SETTLING_BEATS_PER_INTERVAL} times per interval for {@link #SETTLING_INTERVALS}
 * intervals, then once per interval again: an instance that joins is seen by the holders, and takes
 * the lanes they give up, within a fraction of an interval. (Beating once per interval, a joining
 * instance that beat just before the holder released took the lanes only at its next beat: half the
 * lanes stood unowned for up to a whole interval, 2.5 s by default, in the middle of a drain.)
 *
 * <p>The heartbeat thread and the publishing thread both hold {@link #leaseLock} while they change
 * the lease table, so their views never cross. Time is read from the injected {@link Ticker}, and
 * the heartbeat waits on the injected {@link Sleeper}. Thread-safe.
 */
final class LaneOwnership {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

  /** Heartbeats per interval while the fair share settles after the live instances changed. */
  static final int SETTLING_BEATS_PER_INTERVAL = 20;

  /** How many heartbeat intervals the settling lasts after the live instances changed. */
  static final int SETTLING_INTERVALS = 2;

  /**
   * Lanes owned and the local deadline (a {@link Ticker} reading) before which their leases are
   * surely valid.
   */
  record Ownership(Map<Integer, LaneLease> leases, long validUntilNanos) {
    static final Ownership NONE = new Ownership(Map.of(), Long.MIN_VALUE);
  }

  private final String instanceId;
  private final String owner;
  private final RelayStore store;
  private final Duration leaseTtl;
  private final Duration heartbeatInterval;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private final RelayListener listener;
  private final Runnable afterHeartbeat;
  private final ReentrantLock leaseLock = new ReentrantLock();
  private volatile Ownership ownership = Ownership.NONE;
  private volatile Set<Integer> releaseRequested = Set.of();
  // heartbeat thread only (and start(), before that thread exists)
  private int lastLive; // 0 until a heartbeat succeeds
  private long settlingUntil;
  private boolean sampled;
  private long nextSample;

  /**
   * @param owner the owner token in the lease table
   * @param listener told when the owned lanes change; must not throw
   * @param afterHeartbeat run after a heartbeat, at most once per interval, outside the lease lock
   *     (the backlog sample)
   */
  LaneOwnership(
      String instanceId,
      String owner,
      RelayStore store,
      Duration leaseTtl,
      Duration heartbeatInterval,
      Ticker ticker,
      Sleeper sleeper,
      RelayListener listener,
      Runnable afterHeartbeat) {
    this.instanceId = instanceId;
    this.owner = owner;
    this.store = store;
    this.leaseTtl = leaseTtl;
    this.heartbeatInterval = heartbeatInterval;
    this.ticker = ticker;
    this.sleeper = sleeper;
    this.listener = listener;
    this.afterHeartbeat = afterHeartbeat;
  }

  /**
   * Waits until the next beat is due ({@link #nextBeatIn()}), then beats, while {@code running};
   * returns when interrupted.
   */
  void heartbeatLoop(BooleanSupplier running) {
    while (running.getAsBoolean()) {
      try {
        sleeper.sleep(nextBeatIn());
      } catch (InterruptedException e) {
        return;
      }
      if (running.getAsBoolean()) {
        heartbeat();
      }
    }
  }

  /**
   * Registers the instance, renews its leases and takes or requests to give up lanes to reach the
   * fair share {@code ceil(lanes / live instances)}. A failure is logged and retried at the next
   * heartbeat; the leases then stay valid only until their old deadline.
   */
  void heartbeat() {
    leaseLock.lock();
    try {
      long t0 = ticker.nanos();
      int live = store.heartbeat(owner, leaseTtl);
      if (live != lastLive) {
        // an instance joined or left (or this one started): beat often until the share settles
        lastLive = live;
        settlingUntil = t0 + heartbeatInterval.toNanos() * SETTLING_INTERVALS;
      }
      Map<Integer, LaneLease> mine = new TreeMap<>();
      for (LaneLease l : store.renewLeases(owner, leaseTtl)) {
        mine.put(l.lane(), l);
      }
      int fair = (store.laneCount() + live - 1) / live;
      Set<Integer> release = Set.of();
      if (mine.size() > fair) {
        List<Integer> lanes = new ArrayList<>(mine.keySet());
        release = Set.copyOf(lanes.subList(fair, lanes.size()));
      } else if (mine.size() < fair) {
        for (LaneLease l : store.acquireLeases(owner, fair - mine.size(), leaseTtl)) {
          mine.put(l.lane(), l);
        }
      }
      Set<Integer> before = ownership.leases().keySet();
      ownership = new Ownership(Map.copyOf(mine), validUntil(t0));
      releaseRequested = release;
      if (!before.equals(mine.keySet())) {
        log.debug("relay {} owns lanes {}", instanceId, mine.keySet());
        listener.onLanesChanged(new TreeSet<>(mine.keySet()));
      }
    } catch (RuntimeException e) {
      log.warn("relay {}: heartbeat failed; will retry", instanceId, e);
    } finally {
      leaseLock.unlock();
    }
    if (!sampled || ticker.reached(nextSample)) {
      // once per interval, however often the heartbeat beats while the share settles
      sampled = true;
      nextSample = ticker.deadlineIn(heartbeatInterval);
      afterHeartbeat.run();
    }
  }

  /**
   * How long the heartbeat waits before its next beat: a {@link #SETTLING_BEATS_PER_INTERVAL}th of
   * the interval until {@link #SETTLING_INTERVALS} intervals have passed since the live instances
   * last changed, the interval after that.
   */
  Duration nextBeatIn() {
    if (lastLive > 0 && !ticker.reached(settlingUntil)) {
      return heartbeatInterval.dividedBy(SETTLING_BEATS_PER_INTERVAL);
    }
    return heartbeatInterval;
  }

  /**
   * The local deadline of leases renewed by a heartbeat that started at {@code t0}: the store
   * extended them to {@code db_now + ttl} where {@code db_now >= t0}; a fifth of the TTL is kept as
   * a margin for clock rate and latency.
   */
  private long validUntil(long t0) {
    return t0 + leaseTtl.toNanos() - leaseTtl.toNanos() / 5;
  }

  /** Whether a release was requested and not yet performed. */
  boolean releasePending() {
    return !releaseRequested.isEmpty();
  }

  /**
   * Gives up the lanes the heartbeat asked to release (called by the publishing thread between
   * batches, when none of their rows is in flight).
   */
  void applyReleases() {
    Set<Integer> release = releaseRequested;
    if (release.isEmpty()) {
      return;
    }
    leaseLock.lock();
    try {
      Map<Integer, LaneLease> mine = new HashMap<>(ownership.leases());
      List<LaneLease> giving = new ArrayList<>();
      for (Integer lane : release) {
        LaneLease l = mine.remove(lane);
        if (l != null) {
          giving.add(l);
        }
      }
      if (!giving.isEmpty()) {
        store.releaseLeases(owner, giving);
        ownership = new Ownership(Map.copyOf(mine), ownership.validUntilNanos());
        log.debug("relay {} released lanes {}", instanceId, release);
        listener.onLanesChanged(new TreeSet<>(mine.keySet()));
      }
      releaseRequested = Set.of();
    } finally {
      leaseLock.unlock();
    }
  }

  /**
   * Gives up {@code lost} lanes at once (called by the publishing thread when the broker fenced
   * them: another relay owns them). The release is fenced by epoch in the store, so it changes
   * nothing if the lane already has a new owner; a lane given up this way is acquired again (under
   * a new epoch) by whoever takes it next, this relay included.
   */
  void loseLanes(Set<Integer> lost) {
    leaseLock.lock();
    try {
      Map<Integer, LaneLease> mine = new HashMap<>(ownership.leases());
      List<LaneLease> giving = new ArrayList<>();
      for (Integer lane : lost) {
        LaneLease l = mine.remove(lane);
        if (l != null) {
          giving.add(l);
        }
      }
      if (giving.isEmpty()) {
        return;
      }
      try {
        store.releaseLeases(owner, giving);
      } catch (RuntimeException e) {
        log.warn("relay {}: could not release fenced lanes {} (they expire)", instanceId, lost, e);
      }
      ownership = new Ownership(Map.copyOf(mine), ownership.validUntilNanos());
      log.warn("relay {} gave up lanes {}: the broker fenced them", instanceId, lost);
      listener.onLanesChanged(new TreeSet<>(mine.keySet()));
    } finally {
      leaseLock.unlock();
    }
  }

  /** The lanes owned now, with their leases and validity. */
  Ownership current() {
    return ownership;
  }

  /** Whether {@code own} holds lanes whose leases are surely still valid now. */
  boolean valid(Ownership own) {
    return !own.leases().isEmpty() && !ticker.reached(own.validUntilNanos());
  }

  /** Whether the lanes owned now are surely still leased. */
  boolean valid() {
    return valid(ownership);
  }

  /** The lanes owned now, sorted. */
  Set<Integer> lanes() {
    return new TreeSet<>(ownership.leases().keySet());
  }

  /** How many lanes are owned now. */
  int count() {
    return ownership.leases().size();
  }

  /** Releases every lane and unregisters the instance (at close); may throw. */
  void releaseAll() {
    leaseLock.lock();
    try {
      store.unregister(owner);
      ownership = Ownership.NONE;
    } finally {
      leaseLock.unlock();
    }
  }
}
