package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.testkit.ChildJvm;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Peak heap of a consumer working through a backlog: a child JVM (so nothing else shares its heap)
 * with {@code -Xmx256m} runs an AT_LEAST_ONCE subscriber with default settings over the whole
 * backlog and reports the peak heap used (sum of the heap pools' peaks) and the largest live set
 * seen after a collection. Running out of heap would fail the measurement.
 */
public final class HeapBench {

  private static final String RESULT = "HEAP-RESULT ";

  private final BenchEnv env;
  private final BenchConfig config;

  public HeapBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Fills a topic with the backlog, then lets a child JVM consume it. */
  public Measurement run() {
    int n = config.heapBacklog();
    String topic = env.topic("heap", ConsumerBench.PARTITIONS);
    env.fillTopic(topic, n);
    try (ChildJvm child =
        ChildJvm.builder(HeapBench.class)
            .jvmOptions("-Xmx256m")
            .args(env.bootstrap(), topic, Integer.toString(n))
            .build()) {
      child.start();
      String line = child.awaitLogLine(l -> l.startsWith(RESULT), Duration.ofMinutes(10));
      String[] f = line.substring(RESULT.length()).trim().split(" ");
      return Measurement.of("consumer_peak_heap_mb", Double.parseDouble(f[0]), "MB")
          .target(Target.atMost(256))
          .note(
              String.format(
                  java.util.Locale.ROOT,
                  "%,d-message backlog consumed by a child JVM with -Xmx256m at %,.0f msgs/s;"
                      + " largest live set after GC %.0f MB",
                  n,
                  Double.parseDouble(f[2]),
                  Double.parseDouble(f[1])));
    }
  }

  /**
   * The child: consumes {@code args[2]} messages of topic {@code args[1]} at {@code args[0]}, then
   * prints {@code HEAP-RESULT peakMb liveMb msgsPerSecond} and exits.
   */
  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[2]);
    AtomicLong seen = new AtomicLong();
    AtomicLong liveMax = new AtomicLong();
    Subscription sub = Subscription.builder("bench-heap-" + args[1]).topics(args[1]).build();
    long t0 = System.nanoTime();
    try (KafkaSubscriber s =
        KafkaSubscriber.builder(args[0], sub).handler(d -> seen.incrementAndGet()).build()) {
      s.start();
      while (seen.get() < n) {
        liveMax.accumulateAndGet(liveAfterGc(), Math::max);
        Thread.sleep(20);
      }
    }
    double rate = Rate.since(t0, n);
    long peak = 0;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP) {
        peak += p.getPeakUsage().getUsed();
      }
    }
    liveMax.accumulateAndGet(liveAfterGc(), Math::max);
    System.out.printf(
        java.util.Locale.ROOT,
        "%s%.1f %.1f %.0f%n",
        RESULT,
        peak / 1048576.0,
        liveMax.get() / 1048576.0,
        rate);
    System.out.flush();
    System.exit(0);
  }

  private static long liveAfterGc() {
    long live = 0;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP && p.getCollectionUsage() != null) {
        live += p.getCollectionUsage().getUsed();
      }
    }
    return live;
  }
}
