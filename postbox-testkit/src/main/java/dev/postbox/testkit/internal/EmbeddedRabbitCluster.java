package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import dev.postbox.testkit.RabbitCluster;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The test kit's {@link RabbitCluster}: see there. Thread-safe. */
public final class EmbeddedRabbitCluster implements RabbitCluster {

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedRabbitCluster.class);

  /** A cluster's configuration, from {@link RabbitCluster.Builder}. */
  public record Settings(
      Path script, int nodes, int schedulers, String partitionHandling, Duration startupTimeout) {}

  /** How often a joining node looks for node 0 at its first boot, in milliseconds. */
  private static final long DISCOVERY_RETRY_MS = 500;

  private final Settings settings;
  private final List<RabbitNodeProcess> nodes = new ArrayList<>();
  private final Runnable onExit = this::close;
  private boolean closed;

  /** A cluster with {@code settings}, not started yet. */
  public EmbeddedRabbitCluster(Settings settings) {
    this.settings = settings;
  }

  @Override
  public int size() {
    return settings.nodes();
  }

  @Override
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException("closed");
    }
    long begin = System.nanoTime();
    long deadline = begin + settings.startupTimeout().toNanos();
    if (nodes.isEmpty()) {
      create();
    }
    nodes.forEach(RabbitNodeProcess::launch);
    nodes.forEach(n -> n.awaitAmqp(deadline));
    awaitAllRunning(deadline);
    LOG.info(
        "RabbitMQ cluster of {} nodes ({}) running after {} ms",
        nodes.size(),
        String.join(", ", addresses()),
        RabbitNodeProcess.millisSince(begin));
  }

  /**
   * Writes each node's files. The cluster forms as the nodes first boot, in parallel, through
   * RabbitMQ's peer discovery from the configuration file ({@code classic_config}, the default
   * backend, documented in RabbitMQ's cluster formation guide): node 0 lists no peer, so it
   * initialises a new cluster at once; node i lists node 0 and itself, so at its first boot (an
   * empty database) it retries every {@value #DISCOVERY_RETRY_MS} ms, for up to the start-up
   * timeout, until node 0's database is up, then joins it. The joining nodes hold RabbitMQ's peer
   * discovery lock (a global lock on node 0 and themselves) while they do, so they join one at a
   * time; node 0, listing no node, takes no lock they hold. A restarted node (its database not
   * empty) rejoins the cluster recorded in its database, as before. No {@code rabbitmqctl} call:
   * joining with {@code stop_app}, {@code join_cluster} and {@code start_app} booted three CLI
   * Erlang VMs and the broker application a second time for each joining node.
   */
  private void create() {
    String cookie = HexFormat.of().formatHex(new SecureRandom().generateSeed(16)).toUpperCase();
    int[] ports = FreePorts.pick(2 * settings.nodes());
    String erlangArgs = "+S " + settings.schedulers() + ":" + settings.schedulers();
    String seed = RabbitNodeProcess.nodeName(ports[0]);
    long retries = Math.max(1, settings.startupTimeout().toMillis() / DISCOVERY_RETRY_MS);
    for (int i = 0; i < settings.nodes(); i++) {
      String self = RabbitNodeProcess.nodeName(ports[2 * i]);
      List<String> conf = new ArrayList<>();
      conf.add("cluster_partition_handling = " + settings.partitionHandling());
      if (i > 0) {
        conf.add("cluster_formation.peer_discovery_backend = classic_config");
        conf.add("cluster_formation.classic_config.nodes.1 = " + seed);
        conf.add("cluster_formation.classic_config.nodes.2 = " + self);
        conf.add("cluster_formation.discovery_retry_interval = " + DISCOVERY_RETRY_MS);
        conf.add("cluster_formation.discovery_retry_limit = " + retries);
      }
      Path dir = OwnedDirectories.create("rabbitmq-cluster-");
      nodes.add(
          RabbitNodeProcess.in(dir, settings.script(), ports[2 * i], ports[2 * i + 1])
              .cookie(cookie)
              .erlangArgs(erlangArgs)
              .conf(conf)
              .create());
    }
    Shutdown.runOnExit(onExit);
  }

  @Override
  public void start(int node) {
    RabbitNodeProcess n = node(node);
    long begin = System.nanoTime();
    long deadline = begin + settings.startupTimeout().toNanos();
    n.launch();
    n.awaitAmqp(deadline);
    awaitAllRunning(deadline);
    LOG.info("RabbitMQ node {} back in the cluster after {} ms", n.name(), millis(begin));
  }

  @Override
  public void stop(int node) {
    node(node).stop();
    LOG.info("RabbitMQ node {} stopped", node(node).name());
  }

  @Override
  public void kill(int node) {
    node(node).kill();
    LOG.info("RabbitMQ node {} killed (kill -9)", node(node).name());
  }

  @Override
  public boolean isRunning(int node) {
    return node(node).isRunning();
  }

  @Override
  public void heal() {
    for (int i = 0; i < size(); i++) {
      if (!isRunning(i)) {
        start(i);
      }
    }
    awaitAllRunning(System.nanoTime() + settings.startupTimeout().toNanos());
  }

  @Override
  public String uri() {
    return "amqp://guest:guest@" + address(0) + "/%2F";
  }

  @Override
  public List<String> addresses() {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < size(); i++) {
      out.add(address(i));
    }
    return List.copyOf(out);
  }

  @Override
  public String address(int node) {
    return "127.0.0.1:" + node(node).amqpPort();
  }

  @Override
  public String nodeName(int node) {
    return node(node).name();
  }

  @Override
  public Set<Integer> runningNodes() {
    Optional<String> out = onARunningNode("-q", "eval", "rabbit_nodes:all_running().");
    Set<Integer> running = new HashSet<>();
    if (out.isPresent()) {
      for (int i = 0; i < size(); i++) {
        if (out.get().contains("'" + nodeName(i) + "'")) {
          running.add(i);
        }
      }
    }
    return Set.copyOf(running);
  }

  @Override
  public OptionalInt leaderOf(String queue) {
    Optional<String> row = queueRow(queue, "leader");
    if (row.isEmpty()) {
      return OptionalInt.empty();
    }
    OptionalInt leader = indexOf(row.get());
    return leader.isPresent() && isRunning(leader.getAsInt()) ? leader : OptionalInt.empty();
  }

  @Override
  public Set<Integer> membersOf(String queue) {
    return nodesIn(queueRow(queue, "members"));
  }

  @Override
  public Set<Integer> onlineMembersOf(String queue) {
    return nodesIn(queueRow(queue, "online"));
  }

  /** The nodes named in {@code row} (a list of node names as rabbitmqctl prints it). */
  private Set<Integer> nodesIn(Optional<String> row) {
    // node names start with "postbox-" and end with "@localhost": none is inside another
    Set<Integer> members = new HashSet<>();
    for (int i = 0; i < size() && row.isPresent(); i++) {
      if (row.get().contains(nodeName(i))) {
        members.add(i);
      }
    }
    return Set.copyOf(members);
  }

  /** The column {@code info} of {@code queue}'s row in {@code rabbitmqctl list_queues}. */
  private Optional<String> queueRow(String queue, String info) {
    Optional<String> out = onARunningNode("-q", "list_queues", "--no-table-headers", "name", info);
    if (out.isEmpty()) {
      return Optional.empty();
    }
    for (String line : out.get().split("\n")) {
      String[] cols = line.trim().split("\t", 2);
      if (cols.length == 2 && cols[0].equals(queue)) {
        return Optional.of(cols[1].trim());
      }
    }
    return Optional.empty();
  }

  @Override
  public List<Integer> nodesOfConnection(String namePrefix) {
    String expr = RabbitCtl.connectionNodes(namePrefix);
    String out = onARunningNode("-q", "eval", expr).orElse("").replace("\"", "").trim();
    List<Integer> found = new ArrayList<>();
    for (String name : out.isEmpty() ? new String[0] : out.split(",")) {
      indexOf(name.trim()).ifPresent(found::add);
    }
    return List.copyOf(found);
  }

  @Override
  public Path directory(int node) {
    return node(node).dir();
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    Shutdown.cancel(onExit);
    for (RabbitNodeProcess n : nodes) {
      n.kill();
      OwnedDirectories.delete(n.dir());
    }
  }

  private Optional<String> onARunningNode(String... args) {
    for (RabbitNodeProcess n : nodes) {
      if (n.isRunning()) {
        try {
          return Optional.of(n.ctl(args));
        } catch (IllegalStateException e) {
          LOG.debug("{} did not answer rabbitmqctl {}", n.name(), Arrays.toString(args), e);
        }
      }
    }
    return Optional.empty();
  }

  private OptionalInt indexOf(String nodeName) {
    for (int i = 0; i < nodes.size(); i++) {
      if (nodes.get(i).name().equals(nodeName)) {
        return OptionalInt.of(i);
      }
    }
    return OptionalInt.empty();
  }

  private void awaitAllRunning(long deadline) {
    Set<Integer> expected = new HashSet<>();
    for (int i = 0; i < size(); i++) {
      if (isRunning(i)) {
        expected.add(i);
      }
    }
    while (!runningNodes().containsAll(expected)) {
      if (System.nanoTime() > deadline) {
        throw new InfrastructureStartupException(
            "RabbitMQ cluster: nodes " + expected + " not all running in the cluster in time");
      }
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InfrastructureStartupException("interrupted", e);
      }
    }
  }

  private RabbitNodeProcess node(int node) {
    synchronized (this) {
      if (nodes.isEmpty()) {
        throw new IllegalStateException("the cluster was never started");
      }
      if (node < 0 || node >= nodes.size()) {
        throw new IllegalArgumentException("no node " + node + " (0.." + (nodes.size() - 1) + ")");
      }
      return nodes.get(node);
    }
  }

  private static long millis(long begin) {
    return RabbitNodeProcess.millisSince(begin);
  }
}
