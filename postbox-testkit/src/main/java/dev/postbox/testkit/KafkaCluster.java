package dev.postbox.testkit;

import dev.postbox.testkit.internal.EmbeddedKafkaCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A Kafka cluster for tests: several KRaft brokers (Kafka 4.4), each in its own JVM on this
 * machine, each of which a test can kill with {@code kill -9}, stop, freeze and start again on its
 * own.
 *
 * <p>Brokers are numbered {@code 0} to {@code size() - 1}; the number is also the broker's {@code
 * node.id}, so {@link #leaderOf} and {@link #coordinatorOf} answer with it. By default each broker
 * is also a controller (combined mode) and the three form the controller quorum; with {@link
 * Builder#dedicatedController(boolean)} one more JVM is the only controller and the brokers are
 * brokers only, so that killing two of three brokers leaves the quorum (and the ISR shrinking) in
 * place. The defaults are what production clusters use for durability: new topics and the internal
 * topics (offsets, transaction state, share-group state) with replication factor 3 and {@code
 * min.insync.replicas=2}, {@code unclean.leader.election.enable=false}; plus the test kit's usual
 * ones (no automatic topic creation, no initial rebalance delay, short broker session timeouts so
 * that a killed broker is fenced and can register again within seconds), heap {@code -Xmx320m} per
 * JVM, a start-up timeout of 180 s, a new temporary data directory (a subdirectory per node,
 * deleted by {@link #close()}), and listeners on {@code 127.0.0.1} (or each node's own address,
 * with {@link Builder#ownNetworks(boolean)}) on free ports chosen at the first start and kept
 * across restarts.
 *
 * <p>Every JVM dies with this JVM, even if this one is killed with {@code kill -9}. Thread-safe.
 */
public interface KafkaCluster extends AutoCloseable {

  /** A three-broker cluster in combined mode with the defaults, not started yet. */
  static KafkaCluster embedded() {
    return builder().build();
  }

  /** A builder for an embedded cluster. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * Why this machine cannot give each node its own network ({@link Builder#ownNetworks(boolean)}:
   * not root, no iproute2, namespaces refused), or empty if it can.
   */
  static Optional<String> whyNoOwnNetworks() {
    return dev.postbox.testkit.internal.NodeNetworks.unavailable();
  }

  /**
   * The bootstrap servers: every broker's {@code 127.0.0.1:<port>}, comma-separated.
   *
   * @throws IllegalStateException if the cluster was never started
   */
  String bootstrapServers();

  /** How many brokers the cluster has. */
  int size();

  /**
   * Starts every broker (and the dedicated controller), formatting their storage at the first
   * start, and waits until the controller quorum has a leader and every broker is registered and
   * unfenced. Brokers that are running already are left alone.
   *
   * @throws InfrastructureStartupException if that did not happen within the start-up timeout
   */
  void start();

  /**
   * Starts broker {@code node} again (same port, same data) and waits until it is registered and
   * unfenced. Does nothing if it is running.
   */
  void start(int node);

  /** Stops broker {@code node} cleanly ({@code SIGTERM}, controlled shutdown), keeping its data. */
  void stop(int node);

  /**
   * Kills broker {@code node}'s JVM with {@code kill -9}, keeping its data, and waits until gone.
   */
  void kill(int node);

  /** Freezes broker {@code node}'s JVM with {@code SIGSTOP}. */
  void freeze(int node);

  /** Continues a {@linkplain #freeze frozen} broker with {@code SIGCONT}. */
  void thaw(int node);

  /**
   * Drops every packet between broker {@code node} and the other nodes (brokers and controllers),
   * both ways, while clients on this machine still reach it: a network partition. Other nodes may
   * be cut off at the same time.
   *
   * @throws IllegalStateException if the cluster was not built with {@link
   *     Builder#ownNetworks(boolean)}
   */
  void cutOff(int node);

  /** Lets a {@linkplain #cutOff cut-off} broker's packets through again; nothing if not cut off. */
  void reconnect(int node);

  /** The brokers cut off now (empty without {@link Builder#ownNetworks(boolean)}). */
  Set<Integer> cutOffNodes();

  /** Whether broker {@code node}'s JVM is running (also when frozen). */
  boolean isRunning(int node);

  /**
   * Reconnects cut-off brokers, thaws frozen ones and starts stopped or killed ones, then waits
   * until every broker is registered (for a test that begins where an earlier one left the
   * cluster).
   */
  void heal();

  /**
   * Creates a topic with replication factor {@code min(3, size())} and waits until every partition
   * has a leader and all its replicas in sync.
   */
  void createTopic(String name, int partitions);

  /** Like {@link #createTopic(String, int)}, with topic configuration. */
  void createTopic(String name, int partitions, Map<String, String> config);

  /** The broker that leads the partition now, as the cluster's metadata says; empty if none. */
  OptionalInt leaderOf(String topic, int partition);

  /** The brokers in the partition's in-sync replica set now. */
  Set<Integer> inSyncReplicas(String topic, int partition);

  /** The broker that coordinates the consumer group {@code groupId} now. */
  int coordinatorOf(String groupId);

  /** The root data directory (one subdirectory per node). */
  Path dataDirectory();

  /** Broker {@code node}'s log file (its standard output and standard error). */
  Path log(int node);

  /**
   * Kills every JVM and deletes the data directory if it was a temporary one; stops them cleanly
   * otherwise. Idempotent; the cluster cannot be started again.
   */
  @Override
  void close();

  /** Configures an embedded {@link KafkaCluster}. Not thread-safe; {@link #build()} copies it. */
  final class Builder {
    private int brokers = 3;
    private boolean dedicatedController;
    private Optional<Path> dataDirectory = Optional.empty();
    private String maxHeap = "320m";
    private Duration startupTimeout = Duration.ofSeconds(180);
    private final Map<String, String> brokerProperties = new LinkedHashMap<>();
    private Optional<String> classPath = Optional.empty();
    private boolean ownNetworks;

    private Builder() {}

    /**
     * Whether each node runs in its own network namespace (default false: all listen on {@code
     * 127.0.0.1}), so that {@link KafkaCluster#cutOff(int)} can cut one off from the others. Then
     * each node listens on {@code 10.214.<s>.<11+i>}, reached through a bridge; {@link
     * KafkaCluster#bootstrapServers()} names those addresses. Needs root and iproute2; {@link
     * KafkaCluster#start()} fails with {@link InfrastructureStartupException} saying why otherwise.
     */
    public Builder ownNetworks(boolean ownNetworks) {
      this.ownNetworks = ownNetworks;
      return this;
    }

    /** How many brokers (default 3; at least 3, at most 9). */
    public Builder brokers(int brokers) {
      this.brokers = brokers;
      return this;
    }

    /**
     * Whether one extra JVM is the only controller and the brokers are brokers only (default false:
     * every broker is also a controller). In combined mode losing two of three nodes loses the
     * controller quorum, so the ISR cannot shrink and the remaining broker cannot take over
     * leadership; a dedicated controller keeps both working, as a cluster with separate controllers
     * does in production.
     */
    public Builder dedicatedController(boolean dedicatedController) {
      this.dedicatedController = dedicatedController;
      return this;
    }

    /** The root data directory; default a new temporary one, deleted by {@link #close()}. */
    public Builder dataDirectory(Path dir) {
      this.dataDirectory = Optional.of(dir);
      return this;
    }

    /** Each JVM's maximum heap, as for {@code -Xmx}; default {@code 320m}. */
    public Builder maxHeap(String maxHeap) {
      this.maxHeap = Objects.requireNonNull(maxHeap, "maxHeap");
      return this;
    }

    /**
     * How long {@link KafkaCluster#start()} (and {@link KafkaCluster#start(int)}) waits for the
     * cluster; default 180 s (four JVMs starting at once took 115 s on a 2-core machine at load
     * 27).
     */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = Objects.requireNonNull(timeout, "startupTimeout");
      return this;
    }

    /** Adds or overrides a setting in every node's {@code server.properties}. */
    public Builder brokerProperty(String name, String value) {
      brokerProperties.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
      return this;
    }

    /** The brokers' class path; default as for {@link KafkaBroker.Builder#classPath}. */
    public Builder classPath(String classPath) {
      this.classPath = Optional.of(classPath);
      return this;
    }

    /**
     * An embedded cluster with this configuration, not started yet.
     *
     * @throws IllegalArgumentException naming {@code brokers} if it is not between 3 and 9
     */
    public KafkaCluster build() {
      if (brokers < 3 || brokers > 9) {
        throw new IllegalArgumentException("brokers must be between 3 and 9, was " + brokers);
      }
      return new EmbeddedKafkaCluster(
          new EmbeddedKafkaCluster.Settings(
              brokers,
              dedicatedController,
              dataDirectory,
              maxHeap,
              startupTimeout,
              brokerProperties,
              classPath,
              ownNetworks));
    }
  }
}
