package dev.postbox.verify;

import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.NetworkPartitions.Cut;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * The RabbitMQ campaign's network partitions ({@code ./postbox verify --transport rabbitmq
 * --scenarios partitions}; root only): the same network as the Kafka campaign's ({@link
 * NetworkPartitions}), with the private RabbitMQ node listening on the broker's address. {@code
 * relay-a} runs in one namespace and is cut off from PostgreSQL past its lease (the other relay
 * takes its lanes while its confirmed batch can no longer be marked); {@code consumer-1} runs in
 * the other and is cut off from RabbitMQ past its heartbeat (the broker closes its connection and
 * hands its shard queues and unacked deliveries to {@code consumer-2}, while {@code consumer-1}'s
 * handlers may still commit effects to PostgreSQL). Every process reaches both servers by those
 * addresses, as in the Kafka campaign.
 */
final class RabbitPartitions implements AutoCloseable {

  static final String SCENARIO = "partitions";
  static final String RELAY_FAULT = "partition-relay-postgres"; // the Kafka campaign's kind too
  static final String CONSUMER_FAULT = "partition-consumer-rabbitmq";
  static final String PARTITIONED_RELAY = "relay-a";
  static final String PARTITIONED_CONSUMER = "consumer-1";

  private final Optional<NetworkPartitions> network;

  private RabbitPartitions(Optional<NetworkPartitions> network) {
    this.network = network;
  }

  /** No network: every process on 127.0.0.1. */
  static RabbitPartitions none() {
    return new RabbitPartitions(Optional.empty());
  }

  /** Makes the network (call {@link NetworkPartitions#unavailable()} first). */
  static RabbitPartitions create() {
    return new RabbitPartitions(Optional.of(NetworkPartitions.create()));
  }

  boolean active() {
    return network.isPresent();
  }

  /** The addresses the RabbitMQ node listens on besides 127.0.0.1. */
  List<String> brokerAddresses() {
    return network.map(n -> List.of(n.brokerAddress())).orElse(List.of());
  }

  /** Lets PostgreSQL listen on the network's address and trust the namespaces. */
  void configure(PostgresServer.Builder b, Path dir) {
    network.ifPresent(n ->
        b.serverConfig("listen_addresses", "127.0.0.1," + n.postgresAddress())
            .serverConfig(
                "hba_file", NetworkPartitions.writeHbaFile(dir.resolve("network")).toString()));
  }

  /** {@code url} (a JDBC URL on 127.0.0.1) as every child reaches PostgreSQL. */
  String jdbcUrl(String url) {
    return network
        .map(n -> url.replace("//127.0.0.1:", "//" + n.postgresAddress() + ":"))
        .orElse(url);
  }

  /** {@code uri} (an AMQP URI on 127.0.0.1) as every child reaches RabbitMQ. */
  String amqpUri(String uri) {
    return network.map(n -> uri.replace("@127.0.0.1:", "@" + n.brokerAddress() + ":")).orElse(uri);
  }

  /** Runs the partitioned relay and consumer in their namespaces. */
  ChildJvm.Builder place(ChildJvm.Builder b, String name) {
    network.ifPresent(n -> {
      if (name.equals(PARTITIONED_RELAY)) {
        b.launcher(n.launcher(Cut.RELAY_FROM_POSTGRES));
      } else if (name.equals(PARTITIONED_CONSUMER)) {
        b.launcher(n.launcher(Cut.CONSUMER_FROM_BROKER));
      }
    });
    return b;
  }

  /**
   * One partition of {@code fault}'s kind against {@code c} (the partitioned process): cut, a
   * seeded wait past the relay's lease or the consumer's heartbeat, heal. Returns 1 if it fired.
   */
  int inject(String fault, Child c, FaultLog log, SplittableRandom r) {
    NetworkPartitions n = network.orElseThrow();
    boolean relay = fault.equals(RELAY_FAULT);
    if (!c.working() || c.paused()) {
      log.notFired(fault, c.instance(), "not running");
      return 0;
    }
    long ms =
        relay
            ? RabbitEnvironment.LEASE_MS + 1_000 + r.nextInt(4_000)
            : RabbitConsumerMain.HEARTBEAT_SECONDS * 3_000L + 1_000 + r.nextInt(4_000);
    Cut cut = relay ? Cut.RELAY_FROM_POSTGRES : Cut.CONSUMER_FROM_BROKER;
    long t0 = System.nanoTime();
    n.cut(cut);
    try {
      Campaign.sleep(ms);
    } finally {
      n.heal(cut);
    }
    log.fired(
        fault,
        c.instance(),
        (relay ? "PostgreSQL" : "RabbitMQ")
            + " unreachable (blackhole route) for "
            + (System.nanoTime() - t0) / 1_000_000
            + " ms, then healed");
    return 1;
  }

  /** The partitioned process a fault of {@code fault}'s kind cuts. */
  static String target(String fault) {
    return fault.equals(RELAY_FAULT) ? PARTITIONED_RELAY : PARTITIONED_CONSUMER;
  }

  /** Removes every cut still in place (for the end of a phase); never throws. */
  void healAll() {
    network.ifPresent(n -> {
      for (Cut c : Cut.values()) {
        n.healQuietly(c);
      }
    });
  }

  @Override
  public void close() {
    network.ifPresent(NetworkPartitions::close);
  }
}
