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
      Path script,
      int nodes,
      int schedulers,
      String partitionHandling,
      Duration startupTimeout,
      boolean ownNetworks) {}

  /**
   * Erlang's {@code net_ticktime} (seconds) of nodes in their own networks: a peer that sent
   * nothing for this long (between 3/4 and 5/4 of it) is taken as down, so a node cut off from the
   * others notices within seconds (Erlang's default, 60 s, is longer than a test). Only with {@code
   * ownNetworks}: the nodes sharing this machine's network keep the default.
   */
  public static final int NET_TICKTIME_SECONDS = 5;

  /** How often a joining node looks for node 0 at its first boot, in milliseconds. */
  private static final long DISCOVERY_RETRY_MS = 500;

  private final Settings settings;
  private final List<RabbitNodeProcess> nodes = new ArrayList<>();
  private final Runnable onExit = this::close;
  private Optional<NodeNetworks> networks = Optional.empty();
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
    if (settings.ownNetworks()) {
      networks = Optional.of(NodeNetworks.create(settings.nodes()));
      erlangArgs += " " + TICKTIME_ARGS;
    }
    String seed = RabbitNodeProcess.nodeName(ports[0], hostName(0));
    long retries = Math.max(1, settings.startupTimeout().toMillis() / DISCOVERY_RETRY_MS);
    for (int i = 0; i < settings.nodes(); i++) {
      String self = RabbitNodeProcess.nodeName(ports[2 * i], hostName(i));
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
      RabbitNodeProcess.Setup setup =
          RabbitNodeProcess.in(dir, settings.script(), ports[2 * i], ports[2 * i + 1])
              .cookie(cookie)
              .erlangArgs(erlangArgs)
              .conf(conf);
      if (networks.isPresent()) {
        setup.ownNetwork(ownNetwork(networks.get(), i));
      }
      nodes.add(setup.create());
    }
    Shutdown.runOnExit(onExit);
  }

  private static final String TICKTIME_ARGS = "-kernel net_ticktime " + NET_TICKTIME_SECONDS;

  /**
   * Node {@code i}'s host name: {@code localhost}, or with own networks its namespace's name, which
   * every node (and {@code rabbitmqctl}) resolves to the node's address through its Erlang {@code
   * inetrc} file (short node names need a host name, not an address).
   */
  private String hostName(int i) {
    return networks.map(n -> n.namespace(i)).orElse("localhost");
  }

  private static RabbitNodeProcess.OwnNetwork ownNetwork(NodeNetworks n, int i) {
    java.util.Map<String, String> hosts = new java.util.HashMap<>();
    for (int j = 0; j < n.size(); j++) {
      hosts.put(n.namespace(j), n.address(j));
    }
    return new RabbitNodeProcess.OwnNetwork(
        n.launcher(i), n.namespace(i), n.address(i), hosts, TICKTIME_ARGS);
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
  public void cutOff(int node) {
    ownNetworks().cutOff(checked(node));
    LOG.info("RabbitMQ node {} cut off from the other nodes", node(node).name());
  }

  @Override
  public void reconnect(int node) {
    ownNetworks().reconnect(checked(node));
    LOG.info("RabbitMQ node {} reconnected to the other nodes", node(node).name());
  }

  @Override
  public synchronized Set<Integer> cutOffNodes() {
    return networks.map(NodeNetworks::cutOff).orElse(Set.of());
  }

  private synchronized NodeNetworks ownNetworks() {
    if (closed) {
      throw new IllegalStateException("closed");
    }
    if (!settings.ownNetworks()) {
      throw new IllegalStateException(
          "the cluster's nodes share this machine's network: build it with ownNetworks(true)"
              + " to cut one off");
    }
    return networks.orElseThrow(() -> new IllegalStateException("the cluster was never started"));
  }

  private int checked(int node) {
    node(node);
    return node;
  }

  @Override
  public void heal() {
    NodeNetworks n;
    synchronized (this) {
      n = networks.orElse(null);
    }
    if (n != null) {
      n.cutOff().forEach(n::reconnect);
    }
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
    RabbitNodeProcess n = node(node);
    return n.host() + ":" + n.amqpPort();
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
    Set<Integer> named = nodesIn(queueRow(queue, "leader"));
    if (named.size() != 1) {
      return OptionalInt.empty();
    }
    int leader = named.iterator().next();
    return isRunning(leader) ? OptionalInt.of(leader) : OptionalInt.empty();
  }

  @Override
  public Set<Integer> membersOf(String queue) {
    return nodesIn(queueRow(queue, "members"));
  }

  @Override
  public Set<Integer> onlineMembersOf(String queue) {
    return nodesIn(queueRow(queue, "online"));
  }

  /** The nodes named in {@code row} (node names as rabbitmqctl prints them). */
  private Set<Integer> nodesIn(Optional<String> row) {
    // node names are postbox-<distinct port>@<host>: none is inside another
    Set<Integer> members = new HashSet<>();
    for (int i = 0; i < size() && row.isPresent(); i++) {
      if (row.get().contains(nodeName(i))) {
        members.add(i);
      }
    }
    return Set.copyOf(members);
  }

  /**
   * Item {@code info} of {@code queue} ({@link RabbitCtl#queueInfo}) as a running node prints it;
   * empty if the queue is unknown or no node answered.
   */
  private Optional<String> queueRow(String queue, String info) {
    return onARunningNode("-q", "eval", RabbitCtl.queueInfo(queue, info))
        .map(String::trim)
        .filter(out -> out.startsWith("[{" + info + ","));
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
    networks.ifPresent(NodeNetworks::close);
  }

  /**
   * {@code rabbitmqctl args} on the first running node that answers, the nodes not cut off first (a
   * cut-off node pauses, and its view of the cluster is its own).
   */
  private Optional<String> onARunningNode(String... args) {
    Set<Integer> cut = cutOffNodes();
    List<RabbitNodeProcess> order = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      if (!cut.contains(i)) {
        order.add(nodes.get(i));
      }
    }
    cut.forEach(i -> order.add(nodes.get(i)));
    for (RabbitNodeProcess n : order) {
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
