package dev.postbox.bench.internal;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.PostgresShardLeaseStore;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.PostgresServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How long the shards of a key-ordered subscription shared by lease ({@link LeasedInstance}, TTL
 * {@link LeasedInstance#LEASE_TTL}) are not consumed when an instance goes or comes, under a steady
 * {@value #RATE_PER_S} messages/s: from the event until the new owner applied a delivery of every
 * shard that moved (the slowest shard).
 *
 * <ul>
 *   <li><b>kill</b>: of two instances, the one in a JVM of its own is killed ({@code SIGKILL}): the
 *       broker drops its connection at once, its leases expire, the survivor takes its shards;
 *   <li><b>join</b>: a second instance starts beside the one holding every shard, which hands half
 *       of them over (finishes their running deliveries, closes their channels, releases the
 *       leases);
 *   <li><b>leave</b>: that instance closes (releasing its leases) and the other takes its shards
 *       back.
 * </ul>
 */
final class RabbitHandover {

  static final int RATE_PER_S = 400;
  private static final int SHARDS = RabbitScaling.SHARDS;
  private static final AtomicInteger SEQ = new AtomicInteger();

  private final BenchEnv env;
  private final BenchConfig config;
  private final RabbitWork work;
  private final Sleeper sleeper = Sleeper.SYSTEM;

  RabbitHandover(BenchEnv env, BenchConfig config, RabbitWork work) {
    this.env = env;
    this.config = config;
    this.work = work;
  }

  /** The hand-over times after a kill, a join and a leave, each the median of its rounds. */
  List<Measurement> run() throws Exception {
    int rounds = config.quick() ? 1 : RabbitBench.RUNS;
    double[][] ms = new double[3][rounds];
    Db db = env.database("rabbit_handover", 6);
    try {
      for (int r = 0; r < rounds; r++) {
        double[] once = once(db);
        for (int f = 0; f < 3; f++) {
          ms[f][r] = once[f];
        }
      }
    } finally {
      db.dataSource().close();
    }
    String common =
        "lease TTL "
            + LeasedInstance.LEASE_TTL.toMillis()
            + " ms (renewed every quarter), "
            + SHARDS
            + " shards, "
            + RATE_PER_S
            + " messages/s, handler 5 ms: from the event until the new owner applied a message of"
            + " every shard that moved";
    return List.of(
        figure(
            "rabbit_shard_handover_kill_ms",
            ms[0],
            "1 of 2 instances (a JVM of its own) killed with SIGKILL; the survivor takes its 4"
                + " shards once their leases expired (a TTL after its last renewal, so up to the TTL"
                + " and a heartbeat after the kill); "
                + common),
        figure(
            "rabbit_shard_handover_join_ms",
            ms[1],
            "a second instance starts (connects, declares, registers) beside the one holding all"
                + " shards, which hands 4 over; "
                + common),
        figure(
            "rabbit_shard_handover_leave_ms",
            ms[2],
            "the second instance closes (releases its leases); the other takes its 4 shards; "
                + common));
  }

  private static Measurement figure(String name, double[] ms, String note) {
    double[] m = OpenLoop.medianAndSpread(ms);
    long[] each = java.util.Arrays.stream(ms).mapToLong(Math::round).toArray();
    return Measurement.of(name, m[0], "ms")
        .note(
            note
                + (ms.length == 1
                    ? "; one round"
                    : String.format(
                        "; median of %d rounds %s, spread %.0f%%",
                        ms.length, java.util.Arrays.toString(each), m[1] * 100)));
  }

  /** One round: kill, join, leave; their hand-over times in ms. */
  private double[] once(Db db) throws Exception {
    String name = "bench-handover-" + SEQ.incrementAndGet();
    String topic = work.topic("handover", name, SHARDS, RabbitTopology.Consumers.SINGLE_ACTIVE);
    ShardLeaseStore leases = PostgresShardLeaseStore.create(db.dataSource());
    Path log = Files.createTempFile("postbox-bench-instance", ".log");
    Process other = null;
    LeasedInstance joiner = null;
    try (LeasedInstance a =
            new LeasedInstance(
                work.uri(),
                name,
                topic,
                SHARDS,
                leases,
                LeasedInstance.LEASE_TTL,
                LeasedInstance.GO,
                sleeper);
        Trickle trickle = new Trickle(topic)) {
      a.start();
      other = spawn(db, name, topic, log);
      try {
        BenchEnv.awaitCount(
            "instance in its own JVM takes its shards",
            () -> sharedWithOther(a, name, topic) ? 1 : 0,
            1,
            Duration.ofSeconds(120));
      } catch (IllegalStateException e) {
        throw new IllegalStateException(
            e.getMessage() + "; alive " + other.isAlive() + ", its output ends: " + tail(log), e);
      }
      Set<Integer> moved = complement(a.held());
      a.forget(moved);
      long killed = System.nanoTime();
      other.destroyForcibly().waitFor();
      double kill = awaitApplied("after the kill", a, moved, killed);

      joiner =
          new LeasedInstance(
              work.uri(),
              name,
              topic,
              SHARDS,
              leases,
              LeasedInstance.LEASE_TTL,
              LeasedInstance.GO,
              sleeper);
      long joined = System.nanoTime();
      joiner.start();
      List<LeasedInstance> both = List.of(a, joiner);
      BenchEnv.awaitCount(
          "joined", () -> LeasedInstance.balanced(both, SHARDS) ? 1 : 0, 1, Duration.ofSeconds(60));
      double join = awaitApplied("after the join", joiner, joiner.held(), joined);

      Set<Integer> left = joiner.held();
      a.forget(left);
      long leaving = System.nanoTime();
      joiner.close();
      double leave = awaitApplied("after the leave", a, left, leaving);
      return new double[] {kill, join, leave};
    } finally {
      if (other != null) {
        other.destroyForcibly().waitFor();
      }
      if (joiner != null) {
        joiner.close();
      }
      work.delete(name, topic, SHARDS);
      Files.deleteIfExists(log);
    }
  }

  private static String tail(Path log) {
    try {
      String text = Files.readString(log);
      return text.substring(Math.max(0, text.length() - 2_000));
    } catch (java.io.IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /** Whether {@code a} holds half the shards, none moving, and every shard queue has a consumer. */
  private boolean sharedWithOther(LeasedInstance a, String name, String topic) {
    if (a.moving() || a.held().size() != SHARDS / 2) {
      return false;
    }
    try {
      return java.util.Arrays.stream(work.consumers(name, topic, SHARDS)).allMatch(c -> c >= 1);
    } catch (Exception e) {
      return false;
    }
  }

  private static Set<Integer> complement(Set<Integer> held) {
    Set<Integer> out = new TreeSet<>();
    for (int s = 0; s < SHARDS; s++) {
      if (!held.contains(s)) {
        out.add(s);
      }
    }
    return out;
  }

  /** Waits until {@code by} applied a message of each of {@code shards}; ms from {@code since}. */
  private static double awaitApplied(
      String what, LeasedInstance by, Set<Integer> shards, long since) throws InterruptedException {
    BenchEnv.awaitCount(
        "shards consumed again " + what,
        () -> shards.stream().filter(s -> by.firstApplied(s) != 0).count(),
        shards.size(),
        Duration.ofSeconds(60));
    long last = shards.stream().mapToLong(by::firstApplied).max().orElse(since);
    return (last - since) / 1e6;
  }

  /** The other instance: {@link LeasedInstanceMain} in a JVM of its own. */
  private Process spawn(Db db, String name, String topic, Path log) throws java.io.IOException {
    PostgresServer pg = env.postgres();
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(LeasedInstanceMain.class.getName());
    cmd.addAll(
        List.of(
            work.uri(),
            pg.jdbcUrl(db.schema()),
            pg.user(),
            pg.password().orElse(""),
            name,
            topic,
            Integer.toString(SHARDS)));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  /** Publishes {@value #RATE_PER_S} messages/s to a topic on a thread of its own until closed. */
  private final class Trickle implements AutoCloseable {
    private final Connection connection;
    private final Thread thread;
    private volatile boolean running = true;

    Trickle(String topic) throws Exception {
      connection = work.connect("bench-trickle");
      Channel ch = connection.createChannel();
      thread =
          Thread.ofPlatform()
              .name("bench-trickle")
              .start(() -> {
                long i = 0;
                try {
                  while (running) {
                    for (int k = 0; k < RATE_PER_S / 100; k++) {
                      RabbitWork.publish(ch, topic, i++);
                    }
                    sleeper.sleep(Duration.ofMillis(10));
                  }
                } catch (Exception e) {
                  if (running) {
                    throw new IllegalStateException("trickle publisher failed", e);
                  }
                }
              });
    }

    @Override
    public void close() throws Exception {
      running = false;
      thread.join();
      connection.close();
    }
  }
}
