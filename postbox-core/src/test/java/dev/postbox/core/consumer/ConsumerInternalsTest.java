package dev.postbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.engine.OffsetTracker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ConsumerInternalsTest {

  @Test
  void aNullLaneRunsUnorderedAndIsNeverTakenForAListOfLanes() throws Exception {
    // the share consumer submits with a null lane; when a multi-lane submit was an overload of
    // submit(Object, Runnable), a null argument chose it and failed (every share poll loop stopped)
    CountDownLatch ran = new CountDownLatch(2);
    try (KeyedExecutor ex = new KeyedExecutor("test", 2)) {
      ex.submit(null, ran::countDown);
      ex.submit(null, ran::countDown);
      assertThat(ran.await(30, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void committableOffsetNeverPassesAnUnfinishedRecord() throws Exception {
    OffsetTracker t = new OffsetTracker();
    assertThat(t.committable()).isEmpty();
    for (long o = 10; o < 15; o++) {
      t.dispatched(o);
    }
    assertThat(t.committable()).hasValue(10);
    // 11..14 finish first (other keys), 10 is slow
    for (long o = 11; o < 15; o++) {
      assertThat(t.tryStart()).isTrue();
      t.ended(o, true);
    }
    assertThat(t.committable()).hasValue(10);
    assertThat(t.tryStart()).isTrue();
    t.ended(10, false); // abandoned: still not committable
    assertThat(t.committable()).hasValue(10);
    assertThat(t.tryStart()).isTrue();
    t.ended(10, true);
    assertThat(t.committable()).hasValue(15);
  }

  @Test
  void revocationStopsUnstartedRecordsAndWaitsForRunningOnes() throws Exception {
    OffsetTracker t = new OffsetTracker();
    t.dispatched(0);
    t.dispatched(1);
    assertThat(t.tryStart()).isTrue(); // record 0 running
    Thread finisher =
        Thread.ofPlatform()
            .start(() -> {
              try {
                Thread.sleep(50);
              } catch (InterruptedException ignored) {
                // test thread
              }
              t.ended(0, true);
            });
    assertThat(t.revokeAndAwait(Duration.ofSeconds(30))).isZero();
    finisher.join();
    assertThat(t.tryStart()).as("record 1 must not start after revocation").isFalse();
    assertThat(t.committable()).hasValue(1);
  }

  @Test
  void keyedExecutorKeepsPerKeyOrderAndRunsKeysConcurrently() throws Exception {
    int keys = 50;
    int perKey = 200;
    Map<Integer, List<Integer>> seen = new ConcurrentHashMap<>();
    CountDownLatch allInside = new CountDownLatch(keys);
    CountDownLatch done = new CountDownLatch(keys * perKey);
    try (KeyedExecutor ex = new KeyedExecutor("test", keys)) {
      for (int i = 0; i < perKey; i++) {
        for (int k = 0; k < keys; k++) {
          int key = k;
          int seq = i;
          ex.submit(
              key,
              () -> {
                if (seq == 0) {
                  allInside.countDown();
                  try { // every key's first task must be running at the same time
                    assertThat(allInside.await(30, TimeUnit.SECONDS)).isTrue();
                  } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                  }
                }
                seen.computeIfAbsent(key, x -> new ArrayList<>()).add(seq);
                done.countDown();
              });
        }
      }
      assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
    }
    for (int k = 0; k < keys; k++) {
      List<Integer> expected = new ArrayList<>();
      for (int i = 0; i < perKey; i++) {
        expected.add(i);
      }
      assertThat(seen.get(k)).as("key " + k).isEqualTo(expected);
    }
  }

  @Test
  void aTaskOnSeveralLanesWaitsForEachAndDisjointLaneSetsRunTogether() throws Exception {
    List<String> order = java.util.Collections.synchronizedList(new ArrayList<>());
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch bothInside = new CountDownLatch(2);
    CountDownLatch done = new CountDownLatch(5);
    try (KeyedExecutor ex = new KeyedExecutor("test", 8)) {
      // a and b run at once (disjoint lanes); ab waits for both; c (lane 3) does not wait
      ex.submitAcross(
          List.of("1"),
          () -> {
            bothInside.countDown();
            Waits.await(release);
            order.add("a");
            done.countDown();
          });
      ex.submitAcross(
          List.of("2", "4"),
          () -> {
            bothInside.countDown();
            Waits.await(release);
            order.add("b");
            done.countDown();
          });
      ex.submitAcross(
          List.of("1", "2"),
          () -> {
            order.add("ab");
            done.countDown();
          });
      ex.submit(
          "4",
          () -> {
            order.add("after-b");
            done.countDown();
          });
      ex.submitAcross(
          List.of("3", "5"),
          () -> {
            order.add("c");
            done.countDown();
          });
      assertThat(bothInside.await(30, TimeUnit.SECONDS))
          .as("tasks on disjoint lanes run together")
          .isTrue();
      assertThat(Waits.awaitOrder(order, "c")).isTrue();
      assertThat(order).as("nothing waiting on lanes 1, 2 or 4 ran").containsExactly("c");
      release.countDown();
      assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(order.indexOf("ab")).isGreaterThan(order.indexOf("a"));
    assertThat(order.indexOf("ab")).isGreaterThan(order.indexOf("b"));
    assertThat(order.indexOf("after-b")).isGreaterThan(order.indexOf("b"));
  }

  /** Waiting helpers of the lane tests. */
  private static final class Waits {
    static void await(CountDownLatch latch) {
      try {
        assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    }

    static boolean awaitOrder(List<String> order, String entry) throws InterruptedException {
      for (int i = 0; i < 30_000 && !order.contains(entry); i++) {
        Thread.sleep(1);
      }
      return order.contains(entry);
    }
  }

  @Test
  void aFailingTaskDoesNotBlockItsLane() throws Exception {
    CountDownLatch second = new CountDownLatch(1);
    try (KeyedExecutor ex = new KeyedExecutor("test", 2)) {
      ex.submit(
          "k",
          () -> {
            throw new IllegalStateException("boom");
          });
      ex.submit("k", second::countDown);
      assertThat(second.await(30, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void subscriptionFromPropertiesAndValidation() {
    Properties p = new Properties();
    p.setProperty("postbox.subscriptions.inventory.topics", "shop.orders, shop.returns");
    p.setProperty("postbox.subscriptions.inventory.guarantee", "effectively-once");
    p.setProperty("postbox.subscriptions.inventory.ordering", "partition");
    p.setProperty("postbox.subscriptions.inventory.concurrency", "64");
    p.setProperty("postbox.subscriptions.inventory.tenants", "acme,globex");
    p.setProperty("postbox.subscriptions.inventory.inbox-retention", "P14D");
    p.setProperty("postbox.subscriptions.other.topics", "x");
    Subscription s = Subscription.fromProperties("inventory", p).build();
    assertThat(s.topics()).containsExactly("shop.orders", "shop.returns");
    assertThat(s.guarantee()).isEqualTo(DeliveryGuarantee.EFFECTIVELY_ONCE);
    assertThat(s.ordering()).isEqualTo(Ordering.PARTITION);
    assertThat(s.concurrency()).isEqualTo(64);
    assertThat(s.allowedTenants()).containsExactlyInAnyOrder("acme", "globex");
    assertThat(s.inboxRetention()).isEqualTo(Duration.ofDays(14));

    p.setProperty("postbox.subscriptions.inventory.concurency", "8");
    assertThatThrownBy(() -> Subscription.fromProperties("inventory", p))
        .hasMessageContaining("unknown subscription property")
        .hasMessageContaining("concurency");
    p.remove("postbox.subscriptions.inventory.concurency");
    p.setProperty("postbox.subscriptions.inventory.guarantee", "twice");
    assertThatThrownBy(() -> Subscription.fromProperties("inventory", p))
        .hasMessageContaining("bad value");

    assertThatThrownBy(() -> Subscription.builder("x").build()).hasMessageContaining("topic");
    assertThatThrownBy(() -> Subscription.builder("x").topics("t").concurrency(0).build())
        .hasMessageContaining("concurrency");
    assertThatThrownBy(
            () -> Subscription.builder("x").topics("t").concurrency(10).maxInFlight(5).build())
        .hasMessageContaining("maxInFlight");
  }
}
