package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.spi.OffsetStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Offsets in PostgreSQL ({@code postbox_consumer_offset}): an offset is applied at most once per
 * group and partition, the advance commits or rolls back with the effect, and two instances
 * applying the same offset at once (a zombie and its successor) apply it once.
 */
@PostboxTest
class OffsetStoreTest {

  private static final String GROUP = "inventory";
  private static final String TOPIC = "orders";

  private DataSource ds;
  private OffsetStore store;

  @BeforeEach
  void setUp(PostboxTestContext ctx) throws SQLException {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresOffsetStore.create(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE effect (partition int NOT NULL, record_offset bigint NOT NULL)");
    }
  }

  private boolean apply(int partition, long offset, AtomicInteger runs) throws Exception {
    return store.applyAt(
        GROUP,
        TOPIC,
        partition,
        offset,
        c -> {
          runs.incrementAndGet();
          try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect VALUES (?, ?)")) {
            ps.setInt(1, partition);
            ps.setLong(2, offset);
            ps.executeUpdate();
          }
        });
  }

  private int effects() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM effect")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private int sessionsWaitingOnALock() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    + " AND datname = current_database()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  @Test
  void eachOffsetIsAppliedOnceAndTheNextOffsetFollows() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    assertThat(store.nextOffset(GROUP, TOPIC, 0)).isEmpty();
    assertThat(apply(0, 0, runs)).isTrue(); // the partition's first apply makes its row
    assertThat(apply(0, 1, runs)).isTrue();
    assertThat(apply(0, 1, runs)).isFalse(); // redelivered: skipped, the work not run
    assertThat(apply(0, 0, runs)).isFalse();
    assertThat(store.nextOffset(GROUP, TOPIC, 0)).isEqualTo(OptionalLong.of(2));
    assertThat(apply(0, 5, runs)).isTrue(); // a gap (compacted or dead-lettered records)
    assertThat(apply(0, 4, runs)).isFalse();
    assertThat(store.nextOffset(GROUP, TOPIC, 0)).isEqualTo(OptionalLong.of(6));
    assertThat(apply(1, 0, runs)).isTrue(); // partitions are independent
    assertThat(runs).hasValue(4);
    assertThat(effects()).isEqualTo(4);
  }

  @Test
  void aFailingEffectLeavesTheOffsetWhereItWas() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    assertThat(apply(0, 0, runs)).isTrue();
    assertThatThrownBy(() ->
            store.applyAt(
                GROUP,
                TOPIC,
                0,
                1,
                c -> {
                  throw new IllegalStateException("effect failed");
                }))
        .hasMessageContaining("effect failed");
    assertThat(store.nextOffset(GROUP, TOPIC, 0)).isEqualTo(OptionalLong.of(1));
    assertThat(apply(0, 1, runs)).isTrue(); // the retry applies it
    assertThat(effects()).isEqualTo(2);
  }

  @Test
  void twoInstancesApplyingTheSameOffsetAtOnceApplyItOnce() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    assertThat(apply(0, 0, runs)).isTrue();
    CountDownLatch inEffect = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    // two threads of our own: the common pool may have one worker on a 2-core machine
    java.util.concurrent.ExecutorService threads =
        java.util.concurrent.Executors.newFixedThreadPool(2);
    CompletableFuture<Boolean> first =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return store.applyAt(
                    GROUP,
                    TOPIC,
                    0,
                    1,
                    c -> {
                      inEffect.countDown();
                      assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
                      try (PreparedStatement ps =
                          c.prepareStatement("INSERT INTO effect VALUES (0, 1)")) {
                        ps.executeUpdate();
                      }
                    });
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            },
            threads);
    assertThat(inEffect.await(60, TimeUnit.SECONDS)).isTrue();
    // the first holds the partition's row: the second waits for its commit, then skips
    CompletableFuture<Boolean> second =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return apply(0, 1, runs);
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            },
            threads);
    // wait until the second really waits on the row's lock (not merely slow to start)
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(60))
        .until(this::sessionsWaitingOnALock, n -> n >= 1);
    assertThat(second).isNotDone();
    release.countDown();
    assertThat(first.get(60, TimeUnit.SECONDS)).isTrue();
    assertThat(second.get(60, TimeUnit.SECONDS)).isFalse();
    assertThat(effects()).isEqualTo(2);
    threads.shutdown();
  }
}
