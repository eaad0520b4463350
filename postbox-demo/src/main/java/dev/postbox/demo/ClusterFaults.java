package dev.postbox.demo;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostgresPair;
import java.io.PrintStream;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The faults of {@code ./postbox demo --cluster}, injected while the orders service places the
 * measured orders (phase 1), by the writer about to place the order at a fixed index, so they
 * always come mid-run whatever the machine's speed:
 *
 * <ol>
 *   <li>at a third of the orders, {@code kill -9} of the broker leading partition {@value
 *       #PARTITION} of the orders topic; a watcher waits for another leader, then (once the
 *       database failover below is done, and at least {@value #DOWN_MS} ms after the kill) starts
 *       the broker again and waits until the partition's three replicas are in sync;
 *   <li>at two thirds, the database fails over: {@code kill -9} of the primary's processes, then
 *       the synchronous standby is promoted. The writers' transactions fail meanwhile and are
 *       retried ({@link FailoverWrites}); the relays, the inventory and the payments process follow
 *       through their pools' multi-host URL.
 * </ol>
 *
 * Each fault is reported ({@link Fault}) with when it fired, the steps of its recovery and the
 * end-to-end recovery: from the fault to the consumer's first receipt of an order committed after
 * it (on the killed leader's partition for the broker fault).
 */
final class ClusterFaults {

  /** The orders topic's partition whose leader is killed. */
  static final int PARTITION = 0;

  /** How long the killed broker stays down at least. */
  static final long DOWN_MS = 4_000;

  private static final Duration WAIT = Duration.ofSeconds(120);

  /**
   * One injected fault, as the report's {@code faults} lists it.
   *
   * @param kind {@code kafka_leader_kill} or {@code postgres_failover}
   * @param target what was killed
   * @param fired whether it was injected (false: the partition had no leader)
   * @param at when, ISO-8601
   * @param atOrder the index of the measured order about to be placed
   * @param recoveryMs from the fault to the consumer's first receipt of an order committed after
   *     the kill took effect (on the killed leader's partition for {@code kafka_leader_kill}); -1
   *     if none was
   * @param stepsMs the recovery's steps, each in ms from the fault: {@code new_leader}, {@code
   *     broker_restarted}, {@code replicas_in_sync}; or {@code promoted}, {@code first_commit} (the
   *     first order committed after the kill, on the promoted standby)
   */
  record Fault(
      @JsonProperty("kind") String kind,
      @JsonProperty("target") String target,
      @JsonProperty("fired") boolean fired,
      @JsonProperty("at") String at,
      @JsonProperty("at_order") int atOrder,
      @JsonProperty("recovery_ms") long recoveryMs,
      @JsonProperty("steps_ms") Map<String, Long> stepsMs) {

    Fault {
      stepsMs = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(stepsMs));
    }
  }

  /** A fault while it runs: when (nano time) and its steps so far. */
  private record Injected(
      String kind,
      String target,
      boolean fired,
      String at,
      int atOrder,
      long nanos, // when it began
      long down, // when the kill had taken effect: commits after it are on the other side
      OptionalInt partition,
      Map<String, Long> steps) {}

  private final KafkaCluster kafka;
  private final PostgresPair pair;
  private final String topic;
  private final int orders;
  private final Clock clock;
  private final PrintStream out;
  private final List<Injected> injected = new ArrayList<>(); // guarded by itself
  private final CountDownLatch failedOver = new CountDownLatch(1);
  private final CountDownLatch done = new CountDownLatch(2); // the broker watcher, the failover

  ClusterFaults(DemoInfrastructure infra, String topic, int orders, Clock clock, PrintStream out) {
    this.kafka = infra.kafkaCluster().orElseThrow();
    this.pair = infra.pair().orElseThrow();
    this.topic = topic;
    this.orders = orders;
    this.clock = clock;
    this.out = out;
  }

  /** Called by a writer before it places measured order {@code index}: fires a fault there. */
  void beforeOrder(int index) {
    if (index == orders / 3) {
      killLeader(index);
    } else if (index == 2 * orders / 3) {
      failOver(index);
    }
  }

  private void killLeader(int index) {
    OptionalInt leader = kafka.leaderOf(topic, PARTITION);
    String tp = topic + "-" + PARTITION;
    if (leader.isEmpty()) {
      add(
          new Injected(
              "kafka_leader_kill", tp, false, now(), index, 0, 0, OptionalInt.empty(), map()));
      out.printf("fault not fired: %s has no leader now%n", tp);
      done.countDown();
      return;
    }
    int node = leader.getAsInt();
    long t0 = System.nanoTime();
    String at = now();
    kafka.kill(node); // returns once the JVM is gone
    long down = System.nanoTime();
    Injected f =
        new Injected(
            "kafka_leader_kill",
            "broker-" + node + ", leader of " + tp,
            true,
            at,
            index,
            t0,
            down,
            OptionalInt.of(PARTITION),
            map());
    add(f);
    out.printf("fault: kill -9 of broker-%d (leader of %s) at order %,d%n", node, tp, index);
    Thread.ofPlatform()
        .name("broker-" + node + "-watcher")
        .daemon(true)
        .start(() -> {
          try {
            watchBroker(f, node);
          } finally {
            done.countDown();
          }
        });
  }

  /** Another leader, then (after the failover) the broker back and the partition in sync. */
  private void watchBroker(Injected f, int node) {
    step(
        f,
        "new_leader",
        () -> {
          OptionalInt now = kafka.leaderOf(topic, PARTITION);
          return now.isPresent() && now.getAsInt() != node;
        });
    try {
      failedOver.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      Thread.sleep(Math.max(0, DOWN_MS - millisSince(f.nanos())));
      kafka.start(node);
      record(f, "broker_restarted");
      step(f, "replicas_in_sync", () -> kafka.inSyncReplicas(topic, PARTITION).size() == 3);
      out.printf("broker-%d back: %s ms after the kill%n", node, f.steps());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      out.printf("broker-%d did not start again: %s%n", node, e.getMessage());
    }
  }

  private void failOver(int index) {
    long t0 = System.nanoTime();
    String at = now();
    String target =
        "primary "
            + hostPort(pair.primary().jdbcUrl())
            + " killed, standby "
            + hostPort(pair.standby().jdbcUrl())
            + " promoted";
    try {
      pair.killPrimary(); // returns once its processes are gone
      Injected f =
          new Injected(
              "postgres_failover",
              target,
              true,
              at,
              index,
              t0,
              System.nanoTime(),
              OptionalInt.empty(),
              map());
      add(f);
      out.printf("fault: kill -9 of the PostgreSQL primary at order %,d%n", index);
      pair.promote();
      record(f, "promoted");
      out.printf("standby promoted %,d ms after the kill%n", f.steps().get("promoted"));
    } finally {
      failedOver.countDown();
      done.countDown();
    }
  }

  /** Waits until the broker is back (or the watcher gave up) and the failover is done. */
  void awaitDone() throws InterruptedException {
    if (!done.await(2 * WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
      out.println("the cluster faults' recovery did not finish in time");
    }
  }

  /** Whether both faults fired. */
  boolean allFired() {
    synchronized (injected) {
      return injected.size() == 2 && injected.stream().allMatch(Injected::fired);
    }
  }

  /** The faults for the report, with the end-to-end recovery from what the consumer received. */
  List<Fault> report(ShopObserver observer, Map<UUID, Long> commitNanos) {
    List<Fault> faults = new ArrayList<>();
    synchronized (injected) {
      for (Injected f : injected) {
        Map<String, Long> steps;
        synchronized (f.steps()) {
          steps = new LinkedHashMap<>(f.steps());
        }
        if (f.kind().equals("postgres_failover")) {
          commitNanos.values().stream()
              .filter(n -> n > f.down())
              .mapToLong(Long::longValue)
              .min()
              .ifPresent(n -> steps.put("first_commit", (n - f.nanos()) / 1_000_000));
        }
        OptionalLong received =
            f.fired()
                ? observer.firstReceivedAfter(f.down(), commitNanos, f.partition())
                : OptionalLong.empty();
        long recovery = received.isPresent() ? (received.getAsLong() - f.nanos()) / 1_000_000 : -1;
        faults.add(
            new Fault(f.kind(), f.target(), f.fired(), f.at(), f.atOrder(), recovery, steps));
      }
    }
    return faults;
  }

  /** Polls {@code condition} until true, then records {@code step}; gives up after the wait. */
  private static void step(Injected f, String step, BooleanSupplier condition) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        record(f, step);
        return;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static void record(Injected f, String step) {
    synchronized (f.steps()) {
      f.steps().put(step, millisSince(f.nanos()));
    }
  }

  private void add(Injected f) {
    synchronized (injected) {
      injected.add(f);
    }
  }

  private String now() {
    return clock.instant().toString();
  }

  private static Map<String, Long> map() {
    return new LinkedHashMap<>();
  }

  private static long millisSince(long nanos) {
    return (System.nanoTime() - nanos) / 1_000_000;
  }

  /** {@code 127.0.0.1:5432} of a single-host JDBC URL. */
  private static String hostPort(String jdbcUrl) {
    String rest = jdbcUrl.substring(jdbcUrl.indexOf("//") + 2);
    return rest.substring(0, rest.indexOf('/'));
  }
}
