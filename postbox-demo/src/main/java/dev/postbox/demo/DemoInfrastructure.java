package dev.postbox.demo;

import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostboxInfrastructure;
import dev.postbox.testkit.PostgresPair;
import dev.postbox.testkit.PostgresServer;
import java.time.Duration;
import java.util.Optional;

/**
 * Where the shop runs: the test kit's shared PostgreSQL server and broker (the default), or with
 * {@code --cluster} a {@link KafkaCluster} of three brokers and a {@link PostgresPair} (a primary
 * with a synchronous standby) of its own, which {@link ClusterFaults} breaks mid-run. {@link
 * #postgres()} is then the pair's current primary: a multi-host JDBC URL ({@code
 * targetServerType=primary}) that the demo and its child processes follow across the failover.
 *
 * @param postgres the database the shop, its processes and the audit use
 * @param transport the broker
 * @param kafkaCluster the cluster, with {@code --cluster}
 * @param pair the PostgreSQL pair, with {@code --cluster}
 */
record DemoInfrastructure(
    PostgresServer postgres,
    ShopTransport transport,
    Optional<KafkaCluster> kafkaCluster,
    Optional<PostgresPair> pair)
    implements AutoCloseable {

  /**
   * How long the brokers and the servers may take to start: three broker JVMs starting at once on a
   * 2-core machine under load took minutes (see the verify campaign's cluster).
   */
  static final Duration STARTUP_TIMEOUT = Duration.ofMinutes(6);

  /** The shared single server and broker of {@code kind} (kept running for later runs). */
  static DemoInfrastructure single(ShopTransport.Kind kind) {
    return new DemoInfrastructure(
        PostboxInfrastructure.shared().postgres(),
        ShopTransport.start(kind),
        Optional.empty(),
        Optional.empty());
  }

  /**
   * A started three-broker Kafka cluster and a started PostgreSQL pair with a synchronous standby
   * (a commit returns once the standby has flushed it, so no acknowledged commit is lost with the
   * primary), both stopped and deleted by {@link #close()}.
   */
  static DemoInfrastructure cluster() {
    KafkaCluster kafka = KafkaCluster.builder().startupTimeout(STARTUP_TIMEOUT).build();
    PostgresPair pair =
        PostgresPair.builder().synchronous(true).startupTimeout(STARTUP_TIMEOUT).build();
    try {
      pair.start();
      kafka.start(); // one after the other: three broker JVMs and two servers on two cores
      return new DemoInfrastructure(
          pair.current(), KafkaShopTransport.on(kafka), Optional.of(kafka), Optional.of(pair));
    } catch (RuntimeException e) {
      kafka.close();
      pair.close();
      throw e;
    }
  }

  /**
   * Rejects a cluster run the demo does not offer: only Kafka with the polling relay, and enough
   * orders for the faults to fall between them.
   */
  static void checkClusterRun(ShopTransport.Kind kind, RelayMode mode, int orders) {
    if (kind != ShopTransport.Kind.KAFKA || mode != RelayMode.POLLING_TABLE) {
      throw new IllegalArgumentException(
          "--cluster runs on Kafka with the polling relay (--transport kafka --relay polling)");
    }
    if (orders < 30) {
      throw new IllegalArgumentException("--cluster needs at least 30 orders");
    }
  }

  boolean isCluster() {
    return kafkaCluster.isPresent();
  }

  /** Stops and deletes the cluster and the pair; leaves the shared infrastructure running. */
  @Override
  public void close() {
    kafkaCluster.ifPresent(KafkaCluster::close);
    pair.ifPresent(PostgresPair::close);
  }
}
