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
 * Heap of a consumer working through a backlog: a child JVM (so nothing else shares its heap) runs
 * an AT_LEAST_ONCE subscriber with default settings over the whole backlog. Its heap is capped at
 * {@value #HEAP_CAP_MB} MB, four times the {@value #TARGET_MB} MB target, so that the target can
 * fail: the figure held to it is the <b>live set</b> ({@code consumer_live_heap_mb}: heap used
 * right after a full collection, sampled at every tenth of the backlog and at its end), not the
 * peak a collector reaches under a cap (a peak measured under a cap at the target could never
 * exceed it). The peak of the heap pools is still reported ({@code consumer_peak_heap_mb}), as
 * measured, without a target: it says how much heap the collector chose to use, not how much the
 * consumer needs.
 */
public final class HeapBench {

  /** The live-set target, in MB. */
  static final int TARGET_MB = 256;

  /** The child's heap cap, in MB: well above the target, so that a larger live set shows. */
  static final int HEAP_CAP_MB = 4 * TARGET_MB;

  private static final String RESULT = "HEAP-RESULT ";

  private final BenchEnv env;
  private final BenchConfig config;

  public HeapBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /**
   * Fills a topic with the backlog, then lets a child JVM consume it: the live set (with the
   * target) and the peak heap.
   */
  public java.util.List<Measurement> run() {
    int n = config.heapBacklog();
    String topic = env.topic("heap", ConsumerBench.PARTITIONS);
    env.fillTopic(topic, n);
    try (ChildJvm child =
        ChildJvm.builder(HeapBench.class)
            .jvmOptions("-Xmx" + HEAP_CAP_MB + "m")
            .args(env.bootstrap(), topic, Integer.toString(n))
            .build()) {
      child.start();
      String line = child.awaitLogLine(l -> l.startsWith(RESULT), Duration.ofMinutes(10));
      String[] f = line.substring(RESULT.length()).trim().split(" ");
      double peak = Double.parseDouble(f[0]);
      double live = Double.parseDouble(f[1]);
      double rate = Double.parseDouble(f[2]);
      String setup =
          String.format(
              java.util.Locale.ROOT,
              "%,d-message backlog consumed by a child JVM with -Xmx%dm at %,.0f msgs/s",
              n,
              HEAP_CAP_MB,
              rate);
      return java.util.List.of(
          Measurement.of("consumer_live_heap_mb", live, "MB")
              .target(Target.atMost(TARGET_MB))
              .note(setup + "; heap used right after a full GC, largest of 11 samples"),
          Measurement.of("consumer_peak_heap_mb", peak, "MB")
              .note(setup + "; peak of the heap pools (the collector's choice under the cap)"));
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
    long elapsed;
    try (KafkaSubscriber s =
        KafkaSubscriber.builder(args[0], sub).handler(d -> seen.incrementAndGet()).build()) {
      s.start();
      long nextSample = n / 10;
      while (seen.get() < n) {
        if (seen.get() >= nextSample) {
          liveMax.accumulateAndGet(liveAfterFullGc(), Math::max);
          nextSample += n / 10;
        }
        Thread.sleep(20);
      }
      elapsed = System.nanoTime() - t0;
      liveMax.accumulateAndGet(liveAfterFullGc(), Math::max);
    }
    // the full collections' pauses are not the consumer's: the rate leaves them out only roughly
    double rate = n / (elapsed / 1e9);
    long peak = 0;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getType() == MemoryType.HEAP) {
        peak += p.getPeakUsage().getUsed();
      }
    }
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

  /** Heap used right after a full collection: the live set at this moment. */
  private static long liveAfterFullGc() {
    System.gc(); // a full, stop-the-world collection with G1 and the serial collector alike
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
