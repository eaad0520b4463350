package dev.postbox.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.spi.IdempotencyStore.Claim;
import dev.postbox.core.spi.IdempotencyStore.Claimed;
import dev.postbox.core.spi.IdempotencyStore.Completion;
import dev.postbox.core.spi.IdempotencyStore.Duplicate;
import dev.postbox.core.spi.IdempotencyStore.InProgress;
import dev.postbox.testkit.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The lease protocol against a real redis-server (a private child process, or POSTBOX_REDIS_URL).
 */
class RedisIdempotencyStoreIT {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration TTL = Duration.ofHours(168);

  private RedisServer redis;
  private RedisIdempotencyStore store;
  private String prefix;

  @BeforeEach
  void connect() {
    redis = RedisServer.sharedOrSkip();
    prefix = "it-" + UUID.randomUUID() + ":"; // isolates the tests sharing the server
    store = RedisIdempotencyStore.builder(redis.uri()).keyPrefix(prefix).build();
  }

  @AfterEach
  void close() {
    if (store != null) {
      store.close();
    }
  }

  @Test
  void aCompletedKeyIsADuplicateWithItsStoredResultAndTheTtl() {
    Claimed c = claimed(store.claim("m1", LEASE, TTL));
    assertThat(c.previousLeaseExpired()).isFalse();
    assertThat(store.complete(c.lease(), utf8("receipt-42"), TTL)).isEqualTo(Completion.COMPLETED);

    Claim again = store.claim("m1", LEASE, TTL);
    assertThat(again).isInstanceOf(Duplicate.class);
    assertThat(new String(((Duplicate) again).result(), StandardCharsets.UTF_8))
        .isEqualTo("receipt-42");
    try (RedisClient client = RedisClient.create(redis.uri());
        StatefulRedisConnection<String, String> c2 = client.connect()) {
      long pttl = c2.sync().pttl(prefix + "m1");
      assertThat(pttl).isBetween(TTL.toMillis() - 60_000, TTL.toMillis());
      assertThat(c2.sync().exists(prefix + "m1#attempt")).as("attempt marker gone").isZero();
    }
  }

  @Test
  void theDefaultPrefixIsIdempotencyColon() {
    try (RedisIdempotencyStore plain = RedisIdempotencyStore.builder(redis.uri()).build();
        RedisClient client = RedisClient.create(redis.uri());
        StatefulRedisConnection<String, String> c2 = client.connect()) {
      String key = "billing:" + UUID.randomUUID();
      plain.claim(key, LEASE, TTL);
      assertThat(c2.sync().get("idempotency:" + key)).startsWith("L");
    }
  }

  @Test
  void aHeldLeaseMakesEveryOtherClaimInProgressNeverClaimed() throws Exception {
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Claim>> claims = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        claims.add(
            pool.submit(() -> {
              go.await();
              return store.claim("race", LEASE, TTL);
            }));
      }
      go.countDown();
      int claimed = 0;
      int inProgress = 0;
      for (Future<Claim> f : claims) {
        Claim c = f.get();
        if (c instanceof Claimed) {
          claimed++;
        } else if (c instanceof InProgress p) {
          inProgress++;
          assertThat(p.remaining()).isPositive().isLessThanOrEqualTo(LEASE);
        }
      }
      assertThat(claimed).isEqualTo(1);
      assertThat(inProgress).isEqualTo(threads - 1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aReleasedLeaseCanBeClaimedAtOnceAndIsNotCountedAsExpired() {
    Claimed first = claimed(store.claim("m2", LEASE, TTL));
    assertThat(store.release(first.lease())).isTrue();
    Claimed second = claimed(store.claim("m2", LEASE, TTL));
    assertThat(second.previousLeaseExpired()).isFalse();
    assertThat(store.release(first.lease())).as("a stale token releases nothing").isFalse();
    assertThat(store.claim("m2", LEASE, TTL)).isInstanceOf(InProgress.class);
  }

  @Test
  void anExpiredLeaseIsReportedAndItsHolderCanNeverCompleteOverTheNewHolder() {
    Claimed first = claimed(store.claim("m3", Duration.ofMillis(200), TTL));
    Claimed second =
        await()
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> store.claim("m3", LEASE, TTL), c -> c instanceof Claimed)
                instanceof Claimed c
            ? c
            : null;
    assertThat(second.previousLeaseExpired()).as("the at-risk window is visible").isTrue();

    assertThat(store.complete(first.lease(), utf8("late"), TTL)).isEqualTo(Completion.LEASE_LOST);
    assertThat(store.release(first.lease())).isFalse();
    assertThat(store.claim("m3", LEASE, TTL))
        .as("still the second's")
        .isInstanceOf(InProgress.class);

    assertThat(store.complete(second.lease(), utf8("second"), TTL)).isEqualTo(Completion.COMPLETED);
    assertThat(
            new String(
                ((Duplicate) store.claim("m3", LEASE, TTL)).result(), StandardCharsets.UTF_8))
        .isEqualTo("second");
    assertThat(store.complete(first.lease(), utf8("late"), TTL))
        .as("never overwrites a stored result")
        .isEqualTo(Completion.LEASE_LOST);
  }

  @Test
  void aLeaseThatExpiredWithNobodyElseIsStillCompletedLate() {
    Claimed first = claimed(store.claim("m4", Duration.ofMillis(100), TTL));
    try (RedisClient client = RedisClient.create(redis.uri());
        StatefulRedisConnection<String, String> c2 = client.connect()) {
      await().atMost(Duration.ofSeconds(10)).until(() -> c2.sync().exists(prefix + "m4") == 0);
    }
    assertThat(store.complete(first.lease(), utf8("r"), TTL))
        .isEqualTo(Completion.COMPLETED_AFTER_LEASE_EXPIRED);
    assertThat(store.claim("m4", LEASE, TTL)).isInstanceOf(Duplicate.class);
  }

  @Test
  void anEmptyResultIsStoredAsEmpty() {
    Claimed c = claimed(store.claim("m5", LEASE, TTL));
    store.complete(c.lease(), new byte[0], TTL);
    assertThat(((Duplicate) store.claim("m5", LEASE, TTL)).result()).isEmpty();
  }

  @Test
  void badSettingsFailAtBuild() {
    assertThatThrownBy(() -> RedisIdempotencyStore.builder("http://x").keyPrefix("").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("redisUri")
        .hasMessageContaining("keyPrefix");
    assertThatThrownBy(() -> store.claim("m6", Duration.ZERO, TTL))
        .isInstanceOf(IllegalArgumentException.class);
  }

  private static Claimed claimed(Claim c) {
    assertThat(c).isInstanceOf(Claimed.class);
    return (Claimed) c;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
