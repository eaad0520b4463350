package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;

/**
 * The peer relays, each at its best documented configuration, doing the same publish as Postbox's
 * relay in the same run (the same records, keys and acknowledgements): gruelbox transaction-outbox
 * ({@link GruelboxPeer}), and Debezium's embedded PostgreSQL connector reading the Postbox outbox
 * table ({@link DebeziumPeer}, in its low-latency configuration, as in every streaming race).
 */
public final class PeerRelays {

  private final BenchEnv env;
  private final BenchConfig config;

  public PeerRelays(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /**
   * gruelbox: see {@link GruelboxPeer}. Quick mode gives each of its configurations a quarter of
   * the entries (at least 100): its four runs and warm-up together write about as many entries as
   * one full-size run, and CI still exercises every configuration.
   */
  public Measurement gruelbox() throws InterruptedException {
    int n = config.peerRelayEvents();
    return new GruelboxPeer(env).run(config.quick() ? Math.max(100, n / 4) : n);
  }

  /** Debezium: see {@link DebeziumPeer}. */
  public Measurement debezium() throws InterruptedException {
    return new DebeziumPeer(env, config).run();
  }
}
