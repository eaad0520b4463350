package dev.postbox.bench.internal;

import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One instance of the shard-lease subscriber of the scaling figures: a key-ordered {@link
 * RabbitSubscriber} on a connection of its own, sharing the shards with the others through {@code
 * leases}, at most {@value #CONCURRENCY} handlers at a time, each waiting {@link #HANDLER_WAIT} on
 * the given {@link Sleeper} (a call to another service, say), once {@code go} is open. It notes
 * when it first applied a delivery of each shard since {@link #forget}, for the hand-over times.
 * Thread-safe.
 */
final class LeasedInstance implements AutoCloseable {

  /** Handlers running at once per instance (the subscription's concurrency). */
  static final int CONCURRENCY = 4;

  /** What the handler waits per message. */
  static final Duration HANDLER_WAIT = Duration.ofMillis(5);

  /** The prefetch of each shard channel. */
  static final int PREFETCH = 50;

  /**
   * How long a shard lease lasts without renewal (renewed every quarter of it) in the hand-over
   * runs; the throughput runs keep the default.
   */
  static final Duration LEASE_TTL = Duration.ofSeconds(2);

  /** A latch already open: handlers that start at once. */
  static final CountDownLatch GO = new CountDownLatch(0);

  private final RabbitSubscriber subscriber;
  private final AtomicLongArray firstApplied;

  LeasedInstance(
      String uri,
      String subscription,
      String topic,
      int shards,
      ShardLeaseStore leases,
      Duration leaseTtl,
      CountDownLatch go,
      Sleeper sleeper) {
    this.firstApplied = new AtomicLongArray(shards);
    Subscription s =
        Subscription.builder(subscription)
            .topics(topic)
            .ordering(Ordering.KEY)
            .concurrency(CONCURRENCY)
            .shutdownTimeout(Duration.ofSeconds(10))
            .build();
    this.subscriber =
        RabbitSubscriber.builder(uri, s)
            .shards(shards)
            .prefetch(PREFETCH)
            .shardLeases(leases)
            .shardLeaseTtl(leaseTtl)
            .handler(d -> {
              go.await();
              sleeper.sleep(HANDLER_WAIT);
              firstApplied.compareAndSet(d.partition(), 0, System.nanoTime());
            })
            .build();
  }

  void start() {
    subscriber.start();
  }

  long applied() {
    return subscriber.stats().applied();
  }

  Set<Integer> held() {
    return subscriber.heldShards();
  }

  /** Whether it is handing shards over now. */
  boolean moving() {
    return !subscriber.shardsHandingOver().isEmpty();
  }

  /** Forgets when {@code shards} were first applied here, so the next application is noted. */
  void forget(Collection<Integer> shards) {
    shards.forEach(s -> firstApplied.set(s, 0));
  }

  /** When ({@link System#nanoTime()}) a delivery of {@code shard} was first applied, or 0. */
  long firstApplied(int shard) {
    return firstApplied.get(shard);
  }

  /** Whether every one of {@code instances} consumes its share of {@code shards}, none moving. */
  static boolean balanced(List<LeasedInstance> instances, int shards) {
    Set<Integer> all = new HashSet<>();
    for (LeasedInstance i : instances) {
      Set<Integer> held = i.held();
      if (held.size() != shards / instances.size() || i.moving()) {
        return false;
      }
      all.addAll(held);
    }
    return all.size() == shards;
  }

  @Override
  public void close() {
    subscriber.close();
  }

  /**
   * A lease store that takes no shard until {@link #open()}: the instances of a run all register
   * first, then each takes its share at its next heartbeat, so none starts with every shard and
   * hands most of them over while the run is timed.
   */
  static final class Gate implements ShardLeaseStore {
    private final ShardLeaseStore store;
    private volatile boolean open;

    Gate(ShardLeaseStore store) {
      this.store = store;
    }

    void open() {
      open = true;
    }

    @Override
    public Group heartbeat(String group, String member, Duration ttl) {
      return store.heartbeat(group, member, ttl);
    }

    @Override
    public Set<Integer> acquire(
        String group, String member, Collection<Integer> shards, Duration ttl) {
      return open ? store.acquire(group, member, shards, ttl) : Set.of();
    }

    @Override
    public void release(String group, String member, Collection<Integer> shards) {
      store.release(group, member, shards);
    }

    @Override
    public void unregister(String group, String member) {
      store.unregister(group, member);
    }
  }
}
