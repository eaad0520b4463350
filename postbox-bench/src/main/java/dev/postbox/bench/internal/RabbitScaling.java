package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.PostgresShardLeaseStore;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.amqp.core.MessageListener;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;

/**
 * Key-ordered throughput with 1, 2 and 4 instances sharing {@value #SHARDS} shard queues by lease
 * ({@link LeasedInstance}: each its own {@code RabbitSubscriber} and connection, in this JVM, at
 * most {@value LeasedInstance#CONCURRENCY} handlers at a time, each waiting 5 ms), beside Spring
 * AMQP's competing consumers on the same work (a {@link SimpleMessageListenerContainer} per
 * instance on every shard queue, without single active consumer, with as many consumers as our
 * instance runs handlers): Spring's keeps no per-key order. Each run consumes a backlog of the same
 * messages (1,000 keys), timed from when every instance consumes its share (ours: all registered
 * first, then each takes its share; Spring: every container started), their handlers held until
 * then, to the last message applied; the rounds alternate every figure, the first (full mode) is a
 * warm-up. The CPU per message of this JVM, the broker and PostgreSQL (the leases) is taken over
 * the same window.
 */
final class RabbitScaling {

  static final int SHARDS = 8;
  static final List<Integer> INSTANCES = List.of(1, 2, 4);

  /**
   * Spring's prefetch, per consumer and queue: each of a container's consumers consumes every shard
   * queue, so 1 buffers 8 messages per consumer, enough for a handler that takes 5 ms. In quick
   * runs, 10 (with or without acks in batches of 10) was no faster at 1, 2 or 4 instances; 50 let
   * the first container to start take 1,600 messages of the backlog into its buffers, so that 4
   * instances did hardly better than 2.
   */
  static final int SPRING_PREFETCH = 1;

  private static final AtomicInteger SEQ = new AtomicInteger();

  private final BenchEnv env;
  private final BenchConfig config;
  private final RabbitWork work;
  private final Sleeper sleeper = Sleeper.SYSTEM;

  RabbitScaling(BenchEnv env, BenchConfig config, RabbitWork work) {
    this.env = env;
    this.config = config;
    this.work = work;
  }

  private int messages() {
    return config.quick() ? 2_000 : 6_000;
  }

  private int rounds() {
    return config.quick() ? 1 : RabbitBench.RUNS;
  }

  List<Measurement> run() throws Exception {
    Db db = env.database("rabbit_scaling", 8);
    try {
      ProcessCpu cpu = ProcessCpu.of(db.dataSource());
      int rounds = rounds();
      RaceRuns.Run[][] ours = new RaceRuns.Run[INSTANCES.size()][rounds];
      RaceRuns.Run[][] spring = new RaceRuns.Run[INSTANCES.size()][rounds];
      for (int r = config.quick() ? 1 : 0; r <= rounds; r++) {
        for (int i = 0; i < INSTANCES.size(); i++) {
          RaceRuns.Run o = leasedOnce(INSTANCES.get(i), db, cpu);
          RaceRuns.Run s = springOnce(INSTANCES.get(i), cpu);
          if (r > 0) {
            ours[i][r - 1] = o;
            spring[i][r - 1] = s;
          }
        }
      }
      return figures(ours, spring);
    } finally {
      db.dataSource().close();
    }
  }

  private List<Measurement> figures(RaceRuns.Run[][] ours, RaceRuns.Run[][] spring) {
    String work =
        messages()
            + " messages (1,000 keys) on "
            + SHARDS
            + " shard queues, "
            + LeasedInstance.CONCURRENCY
            + " handlers at a time per instance, each waiting "
            + LeasedInstance.HANDLER_WAIT.toMillis()
            + " ms; instances in one JVM, each its own connection";
    List<Measurement> out = new ArrayList<>();
    for (int i = 0; i < INSTANCES.size(); i++) {
      int n = INSTANCES.get(i);
      out.add(
          RaceRuns.median(
              "rabbit_shard_leases_" + n + "_instances_per_s",
              ours[i],
              RaceRuns.Run::rate,
              work
                  + "; key order kept: shards shared by lease (PostgreSQL, TTL "
                  + RabbitSubscriber.DEFAULT_SHARD_LEASE_TTL.toSeconds()
                  + " s), single active consumer per shard queue, prefetch "
                  + LeasedInstance.PREFETCH
                  + " per shard channel; timed from every instance consuming its share"));
      out.add(
          RaceRuns.cpuFigure("rabbit_shard_leases_" + n + "_instances_cpu_us_per_msg", ours[i]));
    }
    out.add(
        RaceRuns.pairedRatio(
                "rabbit_shard_leases_2_vs_1_instances",
                ours[1],
                ours[0],
                "rabbit_shard_leases_2_instances_per_s / rabbit_shard_leases_1_instances_per_s")
            .target(Target.atLeast(1.7)));
    out.add(
        RaceRuns.pairedRatio(
                "rabbit_shard_leases_4_vs_1_instances",
                ours[2],
                ours[0],
                "rabbit_shard_leases_4_instances_per_s / rabbit_shard_leases_1_instances_per_s"
                    + " ("
                    + SHARDS
                    + " shards: 2 per instance)")
            .target(Target.atLeast(3)));
    for (int i = 0; i < INSTANCES.size(); i++) {
      int n = INSTANCES.get(i);
      out.add(
          RaceRuns.median(
              "spring_rabbit_competing_" + n + "_instances_per_s",
              spring[i],
              RaceRuns.Run::rate,
              work
                  + "; NO per-key order: SimpleMessageListenerContainer per instance on every shard"
                  + " queue (competing consumers, no single active consumer), "
                  + LeasedInstance.CONCURRENCY
                  + " consumers, prefetch "
                  + SPRING_PREFETCH
                  + " per consumer and queue; timed from every container started"));
      out.add(
          RaceRuns.cpuFigure(
              "spring_rabbit_competing_" + n + "_instances_cpu_us_per_msg", spring[i]));
    }
    out.add(
        RaceRuns.pairedRatio(
            "spring_rabbit_competing_4_vs_1_instances",
            spring[2],
            spring[0],
            "spring_rabbit_competing_4_instances_per_s / spring_rabbit_competing_1_instances_per_s"));
    out.add(
        RaceRuns.pairedRatio(
            "rabbit_shard_leases_4_vs_spring_competing_4",
            ours[2],
            spring[2],
            "rabbit_shard_leases_4_instances_per_s / spring_rabbit_competing_4_instances_per_s:"
                + " ours keeps per-key order, Spring's competing consumers do not"));
    return out;
  }

  /** {@code instances} shard-lease instances on a backlog, timed once they all consume. */
  private RaceRuns.Run leasedOnce(int instances, Db db, ProcessCpu cpu) throws Exception {
    int n = messages();
    String name = "bench-leases-" + SEQ.incrementAndGet();
    String topic = work.topic("leases", name, SHARDS, RabbitTopology.Consumers.SINGLE_ACTIVE);
    work.fill(topic, 0, n);
    LeasedInstance.Gate gate =
        new LeasedInstance.Gate(PostgresShardLeaseStore.create(db.dataSource()));
    CountDownLatch go = new CountDownLatch(1);
    List<LeasedInstance> all = new ArrayList<>();
    try {
      for (int i = 0; i < instances; i++) {
        LeasedInstance li =
            new LeasedInstance(
                work.uri(),
                name,
                topic,
                SHARDS,
                gate,
                RabbitSubscriber.DEFAULT_SHARD_LEASE_TTL,
                go,
                sleeper);
        all.add(li);
        li.start();
      }
      long opened = System.nanoTime();
      gate.open();
      BenchEnv.awaitCount(
          "shard leases balanced",
          () -> LeasedInstance.balanced(all, SHARDS) ? 1 : 0,
          1,
          Duration.ofSeconds(60));
      return timed(
          cpu,
          n,
          opened,
          go,
          () -> all.stream().mapToLong(LeasedInstance::applied).sum(),
          "shard leases");
    } finally {
      go.countDown(); // a run that failed before: let the handlers finish
      all.forEach(LeasedInstance::close);
      work.delete(name, topic, SHARDS);
    }
  }

  /** Spring's competing consumers: a container (and connection) per instance, every queue. */
  private RaceRuns.Run springOnce(int instances, ProcessCpu cpu) throws Exception {
    int n = messages();
    String name = "bench-competing-" + SEQ.incrementAndGet();
    String topic = work.topic("competing", name, SHARDS, RabbitTopology.Consumers.COMPETING);
    work.fill(topic, 0, n);
    String[] queues = new String[SHARDS];
    for (int i = 0; i < SHARDS; i++) {
      queues[i] = RabbitTopology.queue(name, topic, i);
    }
    AtomicLong applied = new AtomicLong();
    CountDownLatch go = new CountDownLatch(1);
    List<CachingConnectionFactory> factories = new ArrayList<>();
    List<SimpleMessageListenerContainer> containers = new ArrayList<>();
    try {
      for (int i = 0; i < instances; i++) {
        CachingConnectionFactory cf = new CachingConnectionFactory(java.net.URI.create(work.uri()));
        factories.add(cf);
        SimpleMessageListenerContainer c = new SimpleMessageListenerContainer(cf);
        c.setQueueNames(queues);
        c.setConcurrentConsumers(LeasedInstance.CONCURRENCY);
        c.setPrefetchCount(SPRING_PREFETCH);
        c.setMessageListener(
            (MessageListener)
                m -> {
                  try {
                    go.await();
                    sleeper.sleep(LeasedInstance.HANDLER_WAIT);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                  }
                  applied.incrementAndGet();
                });
        containers.add(c);
      }
      long started = System.nanoTime();
      containers.forEach(SimpleMessageListenerContainer::start);
      return timed(cpu, n, started, go, applied::get, "spring competing");
    } finally {
      go.countDown();
      containers.forEach(SimpleMessageListenerContainer::stop);
      factories.forEach(CachingConnectionFactory::destroy);
      work.delete(name, topic, SHARDS);
    }
  }

  /**
   * Opens {@code go} (every instance consumes its share, its handlers waiting on it) and waits
   * until {@code applied} reaches {@code n}: the rate, how long after {@code since} the handlers
   * were let go, and the CPU per message in between.
   */
  private static RaceRuns.Run timed(
      ProcessCpu cpu,
      int n,
      long since,
      CountDownLatch go,
      java.util.function.LongSupplier applied,
      String what)
      throws InterruptedException {
    Map<String, Double> before = cpu.snapshot();
    long t0 = System.nanoTime();
    go.countDown();
    BenchEnv.awaitCount(what, applied, n, Duration.ofSeconds(60));
    double rate = Rate.since(t0, n);
    return new RaceRuns.Run(
        rate, (t0 - since) / 1e6, rate, ProcessCpu.perMessageUs(before, cpu.snapshot(), n));
  }
}
