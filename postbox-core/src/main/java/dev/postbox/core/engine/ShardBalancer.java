package dev.postbox.core.engine;

import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shares a subscription's shards among its live instances through a {@link ShardLeaseStore}: a
 * heartbeat (every TTL/4) registers this instance, renews its leases, computes its share ({@link
 * ShardAssignment}), takes free shards of its share and gives up the others.
 *
 * <p>Giving a shard up is the transport's {@link Shards#stop}, run on a thread of its own while the
 * lease is still renewed: it starts no more deliveries of the shard, lets the running ones finish
 * and closes the shard's consumers so that the rest goes back to the broker in order; only then is
 * the lease released and another instance takes the shard. A shard whose lease this instance lost
 * (it was paused past the TTL and another took it) is stopped the same way, without a release. A
 * store failure is logged and retried at the next heartbeat; the shards held keep being consumed
 * (the transport's single active consumer, not the lease, keeps a shard to one consumer). Time: the
 * heartbeat waits on the injected {@link Sleeper}. Thread-safe.
 */
public final class ShardBalancer {

  private static final Logger log = LoggerFactory.getLogger(ShardBalancer.class);

  /** What the transport does when a shard is taken or given up. */
  public interface Shards {
    /** Starts consuming {@code shard}; throws if it cannot (retried at the next heartbeat). */
    void start(int shard) throws Exception;

    /**
     * Stops consuming {@code shard}: no delivery started any more, the running ones finished, the
     * shard's consumers closed (what is unacked goes back to the broker, in order). Blocks.
     */
    void stop(int shard);
  }

  private final ShardLeaseStore store;
  private final String group;
  private final String member;
  private final int shards;
  private final Duration ttl;
  private final Sleeper sleeper;
  private final Shards transport;
  private final Set<Integer> consuming = new TreeSet<>();
  private final Set<Integer> stopping = new HashSet<>();
  private final Object lock = new Object();
  private final Object beating = new Object();
  private volatile boolean running;
  private Thread heartbeat;

  /**
   * @param group the consumer group (the subscription's name)
   * @param member this instance's id, unique in the group
   * @param shards the group's shard count
   */
  public ShardBalancer(
      ShardLeaseStore store,
      String group,
      String member,
      int shards,
      Duration ttl,
      Sleeper sleeper,
      Shards transport) {
    this.store = store;
    this.group = group;
    this.member = member;
    this.shards = shards;
    this.ttl = ttl;
    this.sleeper = sleeper;
    this.transport = transport;
  }

  /** Beats once (so the first instance starts with its share), then every TTL/4 on a thread. */
  public synchronized void start() {
    if (running) {
      throw new IllegalStateException("already started");
    }
    running = true;
    beat();
    heartbeat = Thread.ofVirtual().name("postbox-shards-" + group).start(() -> loop(() -> running));
  }

  private void loop(BooleanSupplier running) {
    while (running.getAsBoolean()) {
      try {
        sleeper.sleep(ttl.dividedBy(4));
      } catch (InterruptedException e) {
        return;
      }
      synchronized (beating) {
        if (running.getAsBoolean()) {
          beat();
        }
      }
    }
  }

  /**
   * One heartbeat: renew, compute the share, start giving up what is above it (or lost), take what
   * is free of it. A store failure is logged; the next heartbeat tries again.
   */
  public void beat() {
    ShardLeaseStore.Group seen;
    try {
      seen = store.heartbeat(group, member, ttl);
    } catch (RuntimeException e) {
      log.warn("{}: shard heartbeat of {} failed; will retry: {}", group, member, e.toString());
      return;
    }
    Set<Integer> held = new TreeSet<>();
    seen.holders()
        .forEach((shard, holder) -> {
          if (holder.equals(member)) {
            held.add(shard);
          }
        });
    Set<Integer> share = ShardAssignment.of(shards, seen.members(), seen.holders(), member);
    Set<Integer> take = new TreeSet<>();
    Set<Integer> stray = new TreeSet<>();
    synchronized (lock) {
      if (!running) {
        return;
      }
      for (int shard : List.copyOf(consuming)) {
        if (stopping.contains(shard)) {
          continue;
        }
        if (!held.contains(shard)) {
          giveUp(shard, false); // lost: another member took it while this one was away
        } else if (!share.contains(shard)) {
          giveUp(shard, true);
        }
      }
      for (int shard : held) {
        if (!consuming.contains(shard) && !share.contains(shard)) {
          stray.add(shard); // held but not consumed (a release that failed): let it go
        }
      }
      for (int shard : share) {
        String holder = seen.holders().get(shard);
        if (!consuming.contains(shard) && (holder == null || holder.equals(member))) {
          take.add(shard);
        }
      }
    }
    if (!stray.isEmpty()) {
      try {
        store.release(group, member, stray);
      } catch (RuntimeException e) {
        log.warn("{}: releasing shards {} failed; will retry: {}", group, stray, e.toString());
      }
    }
    if (take.isEmpty()) {
      return;
    }
    Set<Integer> acquired;
    try {
      acquired = store.acquire(group, member, take, ttl);
    } catch (RuntimeException e) {
      log.warn("{}: taking shards {} failed; will retry: {}", group, take, e.toString());
      return;
    }
    for (int shard : new TreeSet<>(acquired)) {
      synchronized (lock) {
        if (!running || consuming.contains(shard)) {
          continue;
        }
        try {
          transport.start(shard);
          consuming.add(shard);
        } catch (Exception e) {
          log.warn("{}: cannot start shard {}; will retry: {}", group, shard, e.toString());
        }
      }
    }
    log.debug("{}: {} consumes shards {}", group, member, consuming());
  }

  /** Stops {@code shard} on a thread of its own, then releases its lease if {@code release}. */
  private void giveUp(int shard, boolean release) {
    stopping.add(shard);
    log.info(
        "{}: {} gives up shard {}{}", group, member, shard, release ? "" : " (its lease was lost)");
    Thread.ofVirtual()
        .name("postbox-shard-handover-" + group + "-" + shard)
        .start(() -> {
          try {
            transport.stop(shard);
            if (release) {
              store.release(group, member, Set.of(shard));
            }
          } catch (RuntimeException e) {
            log.warn("{}: giving up shard {}: {} (its lease expires)", group, shard, e.toString());
          } finally {
            synchronized (lock) {
              stopping.remove(shard);
              consuming.remove(shard);
            }
          }
        });
  }

  /** The shards consumed now (including those being given up), sorted. */
  public Set<Integer> consuming() {
    synchronized (lock) {
      return new TreeSet<>(consuming);
    }
  }

  /** The shards being given up now. */
  public Set<Integer> handingOver() {
    synchronized (lock) {
      return new TreeSet<>(stopping);
    }
  }

  /** Stops the heartbeat (the transport then closes its consumers itself). Idempotent. */
  public void stop() {
    Thread t;
    synchronized (this) {
      running = false;
      t = heartbeat;
    }
    synchronized (lock) {
      running = false;
    }
    if (t != null) {
      // only between beats: an interrupt inside one would close its database connection (a
      // virtual thread's socket closes when it is interrupted)
      synchronized (beating) {
        t.interrupt();
      }
      try {
        t.join(ttl.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Releases every lease of this instance and leaves the group (after the transport closed its
   * consumers); a failure is logged (the leases then expire after the TTL).
   */
  public void leave() {
    try {
      store.unregister(group, member);
    } catch (RuntimeException e) {
      log.warn("{}: leaving the group failed (its leases expire): {}", group, e.toString());
    }
    synchronized (lock) {
      consuming.clear();
    }
  }
}
