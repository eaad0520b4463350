package dev.postbox.testkit;

import dev.postbox.testkit.internal.EmbeddedRabbitCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;

/**
 * A RabbitMQ cluster for tests: several nodes started as child processes from the machine's
 * RabbitMQ installation (as {@link RabbitMqServer}'s private node), each of which a test can kill
 * with {@code kill -9}, stop and start again on its own (same ports, same data).
 *
 * <p>Nodes are numbered {@code 0} to {@code size() - 1}; {@link #leaderOf} and {@link
 * #nodesOfConnection} answer with these numbers. Each node has its own node name ({@code
 * postbox-<amqp port>@localhost}), AMQP port on 127.0.0.1 (both otherwise with {@link
 * Builder#ownNetworks(boolean)}) and Erlang distribution port (free ports chosen at the first start
 * and kept across restarts), its own directory under the test kit's per-user folder, and all have
 * one Erlang cookie. At the first start the nodes boot in parallel and nodes 1.. join node 0 as
 * they boot, through RabbitMQ's peer discovery from the configuration file ({@code
 * cluster_formation.classic_config.nodes}), one at a time. A quorum queue declared on the cluster
 * has a member on every node (RabbitMQ's default initial group size), its leader first on the node
 * the declaring connection is on. Defaults: {@code cluster_partition_handling = pause_minority} (a
 * node that sees fewer than half of the cluster pauses rather than going on alone), one Erlang
 * scheduler per node ({@code +S 1:1}: three nodes fit beside a Kafka broker and PostgreSQL on two
 * cores), a start-up timeout of 180 s. The guest user ({@code guest}/{@code guest}) logs in from
 * 127.0.0.1.
 *
 * <p>Every node dies with this JVM; one left behind by a JVM killed with {@code kill -9} is stopped
 * by the next test kit JVM that sweeps the folder. Opt-in: nothing starts a cluster unless a test
 * asks for one. Thread-safe.
 */
public interface RabbitCluster extends AutoCloseable {

  /**
   * A builder for a cluster from this machine's {@code rabbitmq-server} ({@link
   * RabbitMqServer#findScript()}), or the test is skipped (a JUnit assumption) with one line saying
   * why when there is none; in CI (the {@code CI} environment variable set) it fails instead.
   *
   * @throws InfrastructureStartupException in CI when RabbitMQ is not installed
   */
  static Builder builderOrSkip() {
    Optional<Path> script = RabbitMqServer.findScript();
    if (script.isPresent()) {
      return new Builder(script.get());
    }
    String ci = System.getenv("CI");
    if (ci != null && !ci.isBlank()) {
      throw new InfrastructureStartupException(
          "CI is set and RabbitMQ is missing: install rabbitmq-server for the cluster tests");
    }
    Assumptions.abort(
        "RabbitMQ cluster tests skipped: no rabbitmq-server installed (looked for "
            + RabbitMqServer.BINARY_ENV
            + ", "
            + RabbitMqServer.DEBIAN_SCRIPT
            + " and the PATH); an external broker cannot be a cluster of local nodes");
    throw new AssertionError("unreachable");
  }

  /**
   * Why this machine cannot give each node its own network ({@link Builder#ownNetworks(boolean)}:
   * not root, no iproute2, namespaces refused), or empty if it can.
   */
  static Optional<String> whyNoOwnNetworks() {
    return dev.postbox.testkit.internal.NodeNetworks.unavailable();
  }

  /** How many nodes the cluster has. */
  int size();

  /**
   * Starts every node; at the first start also joins them into one cluster and waits until every
   * node is running in it. Nodes that are running already are left alone.
   *
   * @throws InfrastructureStartupException if that did not happen within the start-up timeout
   */
  void start();

  /**
   * Starts node {@code node} again (same ports, same data) and waits until it runs in the cluster
   * again. Does nothing if it is running.
   */
  void start(int node);

  /**
   * Stops node {@code node} cleanly ({@code SIGTERM} to its Erlang VM, which stops RabbitMQ as
   * {@code rabbitmqctl stop} does), keeping its data; {@code kill -9} if it has not exited after 30
   * s.
   */
  void stop(int node);

  /** Kills node {@code node}'s Erlang VM with {@code kill -9}, keeping its data. */
  void kill(int node);

  /** Whether node {@code node}'s process is running. */
  boolean isRunning(int node);

  /**
   * Drops every packet between node {@code node} and the other nodes (Erlang distribution and
   * epmd), both ways, while clients on this machine still reach it: a network partition. With
   * {@code pause_minority} the node, seeing fewer than half of the cluster once Erlang's net tick
   * ({@value dev.postbox.testkit.internal.EmbeddedRabbitCluster#NET_TICKTIME_SECONDS} s with own
   * networks) has passed, pauses: it closes its client connections and listener until it sees the
   * majority again, then starts its application again. Other nodes may be cut off at the same time.
   *
   * @throws IllegalStateException if the cluster was not built with {@link
   *     Builder#ownNetworks(boolean)}
   */
  void cutOff(int node);

  /** Lets a {@linkplain #cutOff cut-off} node's packets through again; nothing if not cut off. */
  void reconnect(int node);

  /** The nodes cut off now (empty without {@link Builder#ownNetworks(boolean)}). */
  Set<Integer> cutOffNodes();

  /**
   * Reconnects cut-off nodes, starts stopped or killed ones and waits until every node runs in the
   * cluster.
   */
  void heal();

  /**
   * A URI for node 0, {@code amqp://guest:guest@<address>/%2F} (user, password and vhost for every
   * node; clients that should follow the cluster take {@link #addresses()} as well).
   *
   * @throws IllegalStateException if the cluster was never started
   */
  String uri();

  /**
   * Every node's {@code 127.0.0.1:<amqp port>} (with own networks {@code 10.214.<s>.<11+i>:<amqp
   * port>}), node 0 first.
   */
  List<String> addresses();

  /** Node {@code node}'s address, as in {@link #addresses()}. */
  String address(int node);

  /**
   * Node {@code node}'s Erlang node name, {@code postbox-<port>@localhost} (with own networks
   * {@code postbox-<port>@pbxn<s>-<i>}, its namespace's name).
   */
  String nodeName(int node);

  /**
   * The nodes running in the cluster, as a running node's {@code rabbitmqctl cluster_status}-like
   * view says ({@code rabbit_nodes:all_running()}); empty if none answers.
   */
  Set<Integer> runningNodes();

  /**
   * The node holding the leader of quorum queue {@code queue} in the default vhost, as {@code
   * rabbitmqctl list_queues name leader} on a running node says; empty if the queue is unknown or
   * its leader is on a node that is not running.
   */
  OptionalInt leaderOf(String queue);

  /**
   * The nodes holding a member of quorum queue {@code queue} in the default vhost, as {@code
   * rabbitmqctl list_queues name members} on a running node says; empty if the queue is unknown.
   */
  Set<Integer> membersOf(String queue);

  /**
   * The nodes holding a member of quorum queue {@code queue} in the default vhost whose Raft server
   * runs now, as {@code rabbitmqctl list_queues name online} on a running node says; empty if the
   * queue is unknown. A member on a stopped node is not online; one on a node that has just started
   * is online once its Raft server is back.
   */
  Set<Integer> onlineMembersOf(String queue);

  /**
   * The nodes holding the client connections whose client-provided name starts with {@code
   * namePrefix} (letters, digits, {@code . _ -}), one entry per connection.
   */
  List<Integer> nodesOfConnection(String namePrefix);

  /** Node {@code node}'s directory (data, logs, configuration). */
  Path directory(int node);

  /** Kills every node and deletes their directories. Idempotent; cannot be started again. */
  @Override
  void close();

  /** Configures a {@link RabbitCluster}. Not thread-safe; {@link #build()} copies it. */
  final class Builder {
    private final Path script;
    private int nodes = 3;
    private int schedulers = 1;
    private String partitionHandling = "pause_minority";
    private Duration startupTimeout = Duration.ofSeconds(180);
    private boolean ownNetworks;

    private Builder(Path script) {
      this.script = script;
    }

    /** A builder for a cluster from the {@code rabbitmq-server} script {@code script}. */
    public static Builder of(Path script) {
      return new Builder(Objects.requireNonNull(script, "script"));
    }

    /** How many nodes (default 3; between 3 and 7). */
    public Builder nodes(int nodes) {
      this.nodes = nodes;
      return this;
    }

    /** Erlang schedulers per node ({@code +S n:n}; default 1; between 1 and 64). */
    public Builder schedulers(int schedulers) {
      this.schedulers = schedulers;
      return this;
    }

    /**
     * {@code cluster_partition_handling}: {@code pause_minority} (default), {@code autoheal} or
     * {@code ignore}.
     */
    public Builder partitionHandling(String mode) {
      this.partitionHandling = Objects.requireNonNull(mode, "partitionHandling");
      return this;
    }

    /**
     * Whether each node runs in its own network namespace (default false: all on this machine's
     * network, AMQP on {@code 127.0.0.1}), so that {@link RabbitCluster#cutOff(int)} can cut one
     * off from the others, as {@link KafkaCluster.Builder#ownNetworks(boolean)} does. Then node
     * {@code i} listens for AMQP on {@code 10.214.<s>.<11+i>}, reached through a bridge, is named
     * after its namespace ({@code postbox-<port>@pbxn<s>-<i>}, resolved by the nodes and {@code
     * rabbitmqctl} through an Erlang {@code inetrc} file), has its own epmd, its own {@code
     * rabbitmq-env.conf} in place of the machine's, and Erlang's {@code net_ticktime} is {@value
     * dev.postbox.testkit.internal.EmbeddedRabbitCluster#NET_TICKTIME_SECONDS} s (default 60 s), so
     * that a cut-off node is noticed within seconds; the guest user logs in from the bridge's
     * address. Needs root and iproute2; {@link RabbitCluster#start()} fails with {@link
     * InfrastructureStartupException} saying why otherwise ({@link
     * RabbitCluster#whyNoOwnNetworks()} tells beforehand).
     */
    public Builder ownNetworks(boolean ownNetworks) {
      this.ownNetworks = ownNetworks;
      return this;
    }

    /** How long {@link RabbitCluster#start()} and {@code start(node)} wait; default 180 s. */
    public Builder startupTimeout(Duration timeout) {
      this.startupTimeout = Objects.requireNonNull(timeout, "startupTimeout");
      return this;
    }

    /**
     * A cluster with this configuration, not started yet.
     *
     * @throws IllegalArgumentException naming the option that is out of range
     */
    public RabbitCluster build() {
      if (nodes < 3 || nodes > 7) {
        throw new IllegalArgumentException("nodes must be between 3 and 7, was " + nodes);
      }
      if (schedulers < 1 || schedulers > 64) {
        throw new IllegalArgumentException(
            "schedulers must be between 1 and 64, was " + schedulers);
      }
      if (!Set.of("pause_minority", "autoheal", "ignore").contains(partitionHandling)) {
        throw new IllegalArgumentException(
            "partitionHandling must be pause_minority, autoheal or ignore, was "
                + partitionHandling);
      }
      if (startupTimeout.isNegative() || startupTimeout.isZero()) {
        throw new IllegalArgumentException(
            "startupTimeout must be positive, was " + startupTimeout);
      }
      return new EmbeddedRabbitCluster(
          new EmbeddedRabbitCluster.Settings(
              script, nodes, schedulers, partitionHandling, startupTimeout, ownNetworks));
    }
  }
}
