package dev.postbox.bench;

import java.time.Duration;

/**
 * How big each benchmark is. {@link #quickMode()} is sized for CI (a few minutes on 2 cores),
 * {@link #fullMode()} for the committed table. Immutable and thread-safe.
 *
 * @param quick whether this is the quick mode
 * @param relayEvents outbox rows drained per relay run (and per ceiling / raw producer run)
 * @param peerRelayEvents rows drained by each peer relay (gruelbox is slow; kept smaller)
 * @param writeDuration how long each outbox write run lasts
 * @param consumerEvents records consumed per consumer run
 * @param latencyPhase how long each offered rate is held in the latency benchmark
 * @param keyOrderPartitionEvents records for the partition-ordered run (5 ms each, one at a time)
 * @param keyOrderEvents records for the key-ordered and unordered runs
 * @param heapBacklog the backlog the heap measurement works through
 */
public record BenchConfig(
    boolean quick,
    int relayEvents,
    int peerRelayEvents,
    Duration writeDuration,
    int consumerEvents,
    Duration latencyPhase,
    int keyOrderPartitionEvents,
    int keyOrderEvents,
    int heapBacklog) {

  public BenchConfig {
    if (relayEvents < 1
        || peerRelayEvents < 1
        || consumerEvents < 1
        || keyOrderPartitionEvents < 1
        || keyOrderEvents < 1
        || heapBacklog < 1) {
      throw new IllegalArgumentException("every size must be positive: " + this);
    }
    if (writeDuration.isNegative()
        || writeDuration.isZero()
        || latencyPhase.isNegative()
        || latencyPhase.isZero()) {
      throw new IllegalArgumentException("durations must be positive: " + this);
    }
  }

  /** The CI mode: every figure, small sizes. */
  public static BenchConfig quickMode() {
    return new BenchConfig(
        true,
        10_000,
        1_000,
        Duration.ofSeconds(3),
        5_000,
        Duration.ofSeconds(2),
        200,
        5_000,
        50_000);
  }

  /** The full mode behind {@code docs/benchmarks.md}. */
  public static BenchConfig fullMode() {
    return new BenchConfig(
        false,
        100_000,
        10_000,
        Duration.ofSeconds(10),
        50_000,
        Duration.ofSeconds(10),
        1_000,
        60_000,
        1_000_000);
  }
}
