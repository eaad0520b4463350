package dev.postbox.bench.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * Round trips offered on a fixed schedule (open loop: request {@code i} is sent at {@code i / rate}
 * s whether or not earlier ones were answered), or all at once (a burst: how fast the path answers
 * a backlog, its sustainable maximum); each round trip from the send to its future's completion.
 * Not thread-safe (one run at a time).
 */
final class OpenLoop {

  /** Longest wait for the last answer of a run. */
  static final Duration WAIT = Duration.ofMinutes(10);

  /**
   * One run's figures.
   *
   * @param p50 median round trip, ms
   * @param p99 99th percentile round trip, ms
   * @param sentPerS requests sent per second (the schedule kept, or not)
   * @param answeredPerS answers per second from the first send to the last answer
   * @param answered requests answered
   * @param failed requests that ended without an answer (timed out)
   * @param cpuMsPerRequest CPU time of this process and its descendants (the test kit's broker; not
   *     PostgreSQL, which runs detached) per request, ms
   */
  record Run(
      double p50,
      double p99,
      double sentPerS,
      double answeredPerS,
      int answered,
      int failed,
      double cpuMsPerRequest) {}

  private OpenLoop() {}

  /**
   * Sends {@code n} requests with {@code send} (given their index), at {@code rate} per second, or
   * as fast as {@code send} returns when {@code rate} is 0, and waits for every answer.
   */
  static Run drive(int rate, int n, IntFunction<CompletableFuture<?>> send) throws Exception {
    ConcurrentLinkedQueue<Double> lat = new ConcurrentLinkedQueue<>();
    AtomicInteger failed = new AtomicInteger();
    long[] last = {0};
    List<CompletableFuture<?>> all = new ArrayList<>(n);
    double cpu0 = cpuMs();
    long t0 = System.nanoTime();
    long period = rate > 0 ? TimeUnit.SECONDS.toNanos(1) / rate : 0;
    for (int i = 0; i < n; i++) {
      if (rate > 0) {
        pace(t0 + i * period);
      }
      long start = System.nanoTime();
      all.add(
          send.apply(i)
              .whenComplete((r, e) -> {
                long now = System.nanoTime();
                if (e == null) {
                  lat.add((now - start) / 1e6);
                } else {
                  failed.incrementAndGet();
                }
                synchronized (last) {
                  last[0] = Math.max(last[0], now);
                }
              }));
    }
    double sent = Rate.since(t0, n);
    CompletableFuture.allOf(
            all.stream().map(f -> f.handle((r, e) -> null)).toArray(CompletableFuture[]::new))
        .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    double secs;
    synchronized (last) {
      secs = (last[0] - t0) / 1e9;
    }
    double[] sorted = lat.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return new Run(
        percentile(sorted, 50),
        percentile(sorted, 99),
        sent,
        sorted.length / Math.max(secs, 1e-9),
        sorted.length,
        failed.get(),
        (cpuMs() - cpu0) / Math.max(1, n));
  }

  /**
   * CPU time used so far by this process and its descendants (the test kit's PostgreSQL, broker and
   * RabbitMQ node run as children), ms.
   */
  static double cpuMs() {
    return cpuMsByProcess().values().stream().mapToDouble(Double::doubleValue).sum();
  }

  /**
   * {@link #cpuMs()} by process kind: {@code jvm} (this one), {@code postgres}, {@code broker} (the
   * other descendants: the Kafka broker's JVM, the RabbitMQ node).
   */
  static java.util.Map<String, Double> cpuMsByProcess() {
    java.util.Map<String, Double> by = new java.util.TreeMap<>();
    ProcessHandle self = ProcessHandle.current();
    by.put("jvm", cpu(self));
    self.descendants()
        .forEach(p -> {
          String cmd = p.info().command().orElse("");
          String kind = cmd.contains("postgres") ? "postgres" : "broker";
          by.merge(kind, cpu(p), Double::sum);
        });
    return by;
  }

  private static double cpu(ProcessHandle p) {
    return p.info().totalCpuDuration().map(d -> d.toNanos() / 1e6).orElse(0.0);
  }

  /** The median of {@code values} and their spread ((max - min) / median). */
  static double[] medianAndSpread(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    double median = sorted[sorted.length / 2];
    return new double[] {median, (sorted[sorted.length - 1] - sorted[0]) / Math.max(median, 1e-9)};
  }

  private static void pace(long dueNanos) {
    long wait;
    while ((wait = dueNanos - System.nanoTime()) > 0) {
      LockSupport.parkNanos(wait);
    }
  }

  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    // the rank p/100 * n, less a hair: 99.9 / 100 * 1,000 reads 999.0000000000001 in doubles,
    // which took the maximum for the p99.9 of 1,000 values
    int i = (int) Math.ceil(p / 100 * sorted.length - 1e-9) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }
}
