package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Shard leases on PostgreSQL ({@code postbox_shard_member}, {@code postbox_shard_lease}): the
 * heartbeat's view, a shard taken by one of two members at once, release, expiry and leaving.
 */
@PostboxTest
class ShardLeaseStoreTest {

  private static final Duration TTL = Duration.ofMinutes(5);

  private ShardLeaseStore store;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    PostboxMigrations.migrate(ctx.dataSource());
    store = PostgresShardLeaseStore.create(ctx.dataSource());
  }

  @Test
  void theHeartbeatShowsTheLiveMembersAndWhoHoldsWhat() {
    store.heartbeat("g", "b", TTL);
    store.heartbeat("g", "a", TTL);
    store.heartbeat("other", "z", TTL);
    assertThat(store.acquire("g", "a", List.of(0, 1), TTL)).containsExactly(0, 1);
    assertThat(store.acquire("g", "b", List.of(1, 2), TTL)).as("1 is a's").containsExactly(2);
    assertThat(store.acquire("g", "a", List.of(0), TTL))
        .as("a holds it already")
        .containsExactly(0);
    ShardLeaseStore.Group g = store.heartbeat("g", "a", TTL);
    assertThat(g.members()).containsExactly("a", "b");
    assertThat(g.holders()).isEqualTo(Map.of(0, "a", 1, "a", 2, "b"));

    store.release("g", "b", List.of(0, 2)); // 0 is not b's: unchanged
    assertThat(store.heartbeat("g", "b", TTL).holders()).isEqualTo(Map.of(0, "a", 1, "a"));
    store.unregister("g", "a");
    ShardLeaseStore.Group after = store.heartbeat("g", "b", TTL);
    assertThat(after.members()).containsExactly("b");
    assertThat(after.holders()).isEmpty();
    assertThat(store.acquire("g", "b", List.of(0, 1), TTL)).containsExactly(0, 1);
  }

  @Test
  void anExpiredLeaseIsFreeAndAMemberNotSeenWithinTheTtlIsForgotten() {
    store.heartbeat("g", "a", TTL);
    assertThat(store.acquire("g", "a", List.of(3), Duration.ZERO)).containsExactly(3);
    store.heartbeat("g", "b", TTL);
    assertThat(store.heartbeat("g", "b", TTL).holders()).as("expired").isEmpty();
    assertThat(store.acquire("g", "b", List.of(3), TTL)).containsExactly(3);
    // b's next heartbeat, with a TTL of zero, forgets a (seen before it) and keeps b (seen now)
    assertThat(store.heartbeat("g", "b", Duration.ZERO).members()).containsExactly("b");
  }

  @Test
  void ofTwoMembersTakingTheSameShardsAtOnceEachShardGoesToOne() throws Exception {
    for (int round = 0; round < 20; round++) {
      String group = "race-" + round;
      CyclicBarrier together = new CyclicBarrier(2);
      try (ExecutorService pool = Executors.newFixedThreadPool(2)) {
        Callable<Set<Integer>> a =
            () -> {
              together.await();
              return store.acquire(group, "a", List.of(0, 1, 2, 3), TTL);
            };
        Callable<Set<Integer>> b =
            () -> {
              together.await();
              return store.acquire(group, "b", List.of(0, 1, 2, 3), TTL);
            };
        Future<Set<Integer>> fa = pool.submit(a);
        Future<Set<Integer>> fb = pool.submit(b);
        Set<Integer> sa = fa.get();
        Set<Integer> sb = fb.get();
        Set<Integer> both = new java.util.TreeSet<>(sa);
        both.retainAll(sb);
        assertThat(both).as("taken by both").isEmpty();
        assertThat(sa.size() + sb.size()).isEqualTo(4);
      }
    }
  }
}
