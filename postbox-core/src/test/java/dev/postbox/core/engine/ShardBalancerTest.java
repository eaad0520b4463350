package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The balancer's heartbeats driven by hand against a store on fake time: a shard's lease is
 * released only after the transport stopped it, and an instance that stopped renewing (frozen)
 * finds its shards taken and stops them without a release.
 */
class ShardBalancerTest {

  private static final Duration TTL = Duration.ofSeconds(8);

  private final FakeTime time = FakeTime.create();
  private final MemoryLeases store = new MemoryLeases(time);
  private final List<ShardBalancer> started = new java.util.ArrayList<>();

  @AfterEach
  void stop() {
    started.forEach(ShardBalancer::stop);
  }

  @Test
  void aShardGivenUpKeepsItsLeaseUntilTheTransportStoppedIt() throws Exception {
    Transport ta = new Transport();
    ShardBalancer a = balancer("a", ta);
    assertThat(a.consuming()).containsExactly(0, 1, 2, 3);
    ShardBalancer b = balancer("b", new Transport());
    assertThat(b.consuming()).as("all held by a").isEmpty();

    ta.stopGate = new CountDownLatch(1);
    a.beat();
    assertThat(a.handingOver()).containsExactly(2, 3);
    await().until(() -> ta.stopping.size() == 2);
    b.beat();
    assertThat(b.consuming()).as("leases kept while a's deliveries run").isEmpty();
    assertThat(store.holders()).containsEntry(2, "a").containsEntry(3, "a");

    ta.stopGate.countDown();
    await().until(() -> a.handingOver().isEmpty());
    assertThat(a.consuming()).containsExactly(0, 1);
    b.beat();
    assertThat(b.consuming()).containsExactly(2, 3);
  }

  @Test
  void anInstanceThatStoppedRenewingFindsItsShardsTakenAndStopsThemWithoutARelease() {
    Transport ta = new Transport();
    ShardBalancer a = balancer("a", ta);
    ShardBalancer b = balancer("b", new Transport());
    a.beat();
    await().until(() -> a.handingOver().isEmpty());
    b.beat();
    assertThat(b.consuming()).containsExactly(2, 3);

    // a is frozen: b alone beats while the TTL passes
    time.advance(TTL.dividedBy(2));
    b.beat();
    time.advance(TTL.dividedBy(2).plusSeconds(1));
    b.beat();
    assertThat(b.consuming())
        .as("a forgotten, its expired leases taken")
        .containsExactly(0, 1, 2, 3);
    assertThat(ta.started).containsExactly(0, 1);

    ta.stopGate = new CountDownLatch(1); // holds the stops, so the test sees them under way
    a.beat(); // a wakes up
    assertThat(a.handingOver()).containsExactly(0, 1);
    ta.stopGate.countDown();
    await().until(() -> a.handingOver().isEmpty());
    assertThat(a.consuming()).isEmpty();
    assertThat(store.holders()).as("no release of b's leases").containsEntry(0, "b");
  }

  private ShardBalancer balancer(String member, Transport transport) {
    // the loop's sleep lasts until stop(): the test beats by hand, the store's time is fake
    ShardBalancer b =
        new ShardBalancer(
            store, "g", member, 4, TTL, d -> new CountDownLatch(1).await(), transport);
    b.start();
    started.add(b);
    return b;
  }

  /** Starts at once; a stop waits for {@link #stopGate} when one is set. */
  private static final class Transport implements ShardBalancer.Shards {
    final Set<Integer> started = ConcurrentHashMap.newKeySet();
    final Set<Integer> stopping = ConcurrentHashMap.newKeySet();
    volatile CountDownLatch stopGate;

    @Override
    public void start(int shard) {
      started.add(shard);
    }

    @Override
    public void stop(int shard) {
      stopping.add(shard);
      CountDownLatch gate = stopGate;
      if (gate != null) {
        try {
          gate.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      started.remove(shard);
    }
  }

  /** Members and leases in memory, deadlines on fake time. */
  private static final class MemoryLeases implements ShardLeaseStore {
    private final FakeTime time;
    private final Map<String, Long> seen = new HashMap<>();
    private final Map<Integer, String> owner = new TreeMap<>();
    private final Map<Integer, Long> until = new HashMap<>();

    MemoryLeases(FakeTime time) {
      this.time = time;
    }

    @Override
    public synchronized Group heartbeat(String group, String member, Duration ttl) {
      long now = time.nanos();
      seen.put(member, now);
      seen.values().removeIf(t -> t < now - ttl.toNanos());
      owner.forEach((s, o) -> {
        if (o.equals(member)) {
          until.put(s, now + ttl.toNanos());
        }
      });
      return new Group(new java.util.ArrayList<>(new TreeSet<>(seen.keySet())), holders());
    }

    synchronized Map<Integer, String> holders() {
      Map<Integer, String> live = new HashMap<>();
      owner.forEach((s, o) -> {
        if (until.get(s) > time.nanos()) {
          live.put(s, o);
        }
      });
      return live;
    }

    @Override
    public synchronized Set<Integer> acquire(
        String group, String member, Collection<Integer> shards, Duration ttl) {
      Set<Integer> taken = new TreeSet<>();
      Map<Integer, String> live = holders();
      for (int s : shards) {
        String o = live.get(s);
        if (o == null || o.equals(member)) {
          owner.put(s, member);
          until.put(s, time.nanos() + ttl.toNanos());
          taken.add(s);
        }
      }
      return taken;
    }

    @Override
    public synchronized void release(String group, String member, Collection<Integer> shards) {
      for (int s : shards) {
        if (member.equals(owner.get(s))) {
          owner.remove(s);
          until.remove(s);
        }
      }
    }

    @Override
    public synchronized void unregister(String group, String member) {
      seen.remove(member);
      owner.values().removeIf(member::equals);
    }
  }
}
