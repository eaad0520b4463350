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

  /** gruelbox: see {@link GruelboxPeer}. */
  public Measurement gruelbox() throws InterruptedException {
    return new GruelboxPeer(env).run(config.peerRelayEvents());
  }

  /** Debezium: see {@link DebeziumPeer}. */
  public Measurement debezium() throws InterruptedException {
    return new DebeziumPeer(env, config).run();
  }
}
