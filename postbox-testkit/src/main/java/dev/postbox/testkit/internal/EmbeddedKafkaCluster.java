package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import dev.postbox.testkit.KafkaCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Several KRaft nodes on this machine, each a {@link KraftNode} in its own data directory; see
 * {@link KafkaCluster}. Thread-safe (lifecycle methods are serialized).
 */
public final class EmbeddedKafkaCluster implements KafkaCluster {

  /** Configuration of an embedded cluster; see {@link KafkaCluster.Builder}. */
  public record Settings(
      int brokers,
      boolean dedicatedController,
      Optional<Path> dataDirectory,
      String maxHeap,
      Duration startupTimeout,
      Map<String, String> brokerProperties,
      Optional<String> classPath,
      boolean ownNetworks) {
    public Settings {
      brokerProperties = Collections.unmodifiableMap(new LinkedHashMap<>(brokerProperties));
    }
  }

  private static final Logger LOG = LoggerFactory.getLogger(KafkaCluster.class);
  private static final String HOST = "127.0.0.1";
  private static final String STATE_FILE = "testkit.properties";
  private static final int REPLICATION = 3;
  private static final int MIN_ISR = 2;
  private static final Duration ADMIN_WAIT = Duration.ofSeconds(2);
  private static final long POLL_MILLIS = 50;

  private final Settings settings;
  private final Path dataDir;
  private final boolean temporary;

  /** Broker ports, then the controller ports (one per broker, or one for the dedicated one). */
  private int[] ports;

  private String clusterId;
  private List<KraftNode> brokers = List.of();
  private Optional<KraftNode> controller = Optional.empty();
  private TopicAdmin admin;
  private Optional<NodeNetworks> networks = Optional.empty();
  private volatile boolean closed;

  public EmbeddedKafkaCluster(Settings settings) {
    this.settings = settings;
    this.temporary = settings.dataDirectory().isEmpty();
    this.dataDir = OwnedDirectories.createOrUse(settings.dataDirectory(), "kafka-cluster-");
  }

  @Override
  public synchronized String bootstrapServers() {
    if (ports == null) {
      throw new IllegalStateException(
          "the embedded Kafka cluster was never started, so it has no ports yet: call start()");
    }
    return IntStream.range(0, settings.brokers())
        .mapToObj(i -> host(i) + ":" + ports[i])
        .collect(Collectors.joining(","));
  }

  @Override
  public int size() {
    return settings.brokers();
  }

  @Override
  public synchronized void start() {
    ensureOpen();
    prepare();
    long t0 = System.nanoTime();
    long deadline = t0 + settings.startupTimeout().toNanos();
    List<KraftNode> all = allNodes();
    for (KraftNode n : all) {
      n.formatIfNeeded(clusterId, List.of());
    }
    List<KraftNode> launched = new ArrayList<>();
    for (KraftNode n : all) {
      if (!n.isAlive()) {
        n.launch(); // all at once: a combined node waits for a quorum of the others
        launched.add(n);
      }
    }
    for (KraftNode n : launched) {
      n.awaitStarted(remaining(deadline));
    }
    awaitReady(allBrokerIds(), deadline);
    LOG.info(
        "Kafka cluster {} ({} brokers, {}) ready in {} ms; data {}",
        bootstrapServers(),
        size(),
        settings.dedicatedController() ? "one dedicated controller" : "combined mode",
        Duration.ofNanos(System.nanoTime() - t0).toMillis(),
        dataDir);
  }

  @Override
  public synchronized void start(int node) {
    ensureOpen();
    KraftNode n = broker(node);
    if (n.isAlive()) {
      return;
    }
    long t0 = System.nanoTime();
    long deadline = t0 + settings.startupTimeout().toNanos();
    n.launch();
    n.awaitStarted(remaining(deadline));
    awaitReady(Set.of(node), deadline);
    LOG.info(
        "Kafka cluster: broker {} (pid {}) back in {} ms",
        node,
        n.pid(),
        Duration.ofNanos(System.nanoTime() - t0).toMillis());
  }

  @Override
  public synchronized void stop(int node) {
    KraftNode n = broker(node);
    if (n.isAlive()) {
      int code = n.terminate();
      LOG.info("Kafka cluster: broker {} stopped (exit code {})", node, code);
    }
  }

  @Override
  public synchronized void kill(int node) {
    KraftNode n = broker(node);
    if (n.isAlive()) {
      n.kill();
      LOG.info("Kafka cluster: broker {} killed (kill -9)", node);
    }
  }

  @Override
  public synchronized void freeze(int node) {
    broker(node).pause();
  }

  @Override
  public synchronized void thaw(int node) {
    broker(node).resume();
  }

  @Override
  public synchronized void cutOff(int node) {
    NodeNetworks n = ownNetworks();
    n.cutOff(checkIndex(node));
    LOG.info("Kafka cluster: broker {} cut off from the other nodes", node);
  }

  @Override
  public synchronized void reconnect(int node) {
    NodeNetworks n = ownNetworks();
    n.reconnect(checkIndex(node));
    LOG.info("Kafka cluster: broker {} reconnected to the other nodes", node);
  }

  @Override
  public synchronized Set<Integer> cutOffNodes() {
    return networks.map(NodeNetworks::cutOff).orElse(Set.of());
  }

  private NodeNetworks ownNetworks() {
    ensureOpen();
    if (!settings.ownNetworks()) {
      throw new IllegalStateException(
          "the cluster's nodes share this machine's network: build it with ownNetworks(true)"
              + " to cut one off");
    }
    return networks.orElseThrow(
        () -> new IllegalStateException("the embedded Kafka cluster was never started"));
  }

  @Override
  public synchronized boolean isRunning(int node) {
    return broker(node).isAlive();
  }

  @Override
  public synchronized void heal() {
    ensureOpen();
    if (brokers.isEmpty()) {
      return;
    }
    for (KraftNode n : allNodes()) {
      if (n.isPaused()) {
        n.resume();
      }
    }
    networks.ifPresent(n -> n.cutOff().forEach(n::reconnect));
    start();
  }

  @Override
  public void createTopic(String name, int partitions) {
    createTopic(name, partitions, Map.of());
  }

  @Override
  public void createTopic(String name, int partitions, Map<String, String> config) {
    TopicAdmin a = admin();
    a.createTopic(name, partitions, REPLICATION, config);
    long deadline = System.nanoTime() + settings.startupTimeout().toNanos();
    for (int p = 0; p < partitions; p++) {
      int partition = p;
      awaitTrue(
          () -> {
            TopicPartitionInfo info = a.partition(name, partition);
            return info.isr().size() == info.replicas().size();
          },
          deadline,
          () -> "topic " + name + "-" + partition + " has not all its replicas in sync");
    }
  }

  @Override
  public OptionalInt leaderOf(String topic, int partition) {
    Node leader = ask(a -> a.partition(topic, partition)).leader();
    return leader == null || leader.isEmpty() ? OptionalInt.empty() : OptionalInt.of(leader.id());
  }

  @Override
  public Set<Integer> inSyncReplicas(String topic, int partition) {
    Set<Integer> ids = new TreeSet<>();
    ask(a -> a.partition(topic, partition)).isr().forEach(n -> ids.add(n.id()));
    return ids;
  }

  @Override
  public int coordinatorOf(String groupId) {
    return ask(a -> a.groupCoordinator(groupId));
  }

  /**
   * Asks the cluster's metadata of brokers that are not cut off. A cut-off broker goes on answering
   * as the leader or coordinator it was when it was cut off, and an admin client asks whichever
   * broker is least loaded: while brokers are cut off, a short-lived admin client bootstrapped on
   * the others asks them (once the cut-off ones are fenced, the others no longer name them).
   */
  private <T> T ask(Function<TopicAdmin, T> question) {
    String others;
    TopicAdmin shared;
    synchronized (this) {
      Set<Integer> cut = cutOffNodes();
      others =
          IntStream.range(0, settings.brokers())
              .filter(i -> !cut.contains(i))
              .mapToObj(i -> host(i) + ":" + ports[i])
              .collect(Collectors.joining(","));
      shared = cut.isEmpty() || others.isEmpty() ? admin() : null;
    }
    if (shared != null) {
      return question.apply(shared);
    }
    try (TopicAdmin a = new TopicAdmin(others)) {
      return question.apply(a);
    }
  }

  @Override
  public Path dataDirectory() {
    return dataDir;
  }

  @Override
  public Path log(int node) {
    return nodeDir("node-" + checkIndex(node)).resolve("broker.log");
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (admin != null) {
      admin.close();
    }
    for (KraftNode n : allNodes()) {
      if (temporary) {
        n.kill();
      } else if (n.isAlive()) {
        n.terminate();
      }
    }
    networks.ifPresent(NodeNetworks::close);
    if (temporary) {
      OwnedDirectories.delete(dataDir);
    }
  }

  @Override
  public String toString() {
    return "KafkaCluster[embedded, " + size() + " brokers, " + dataDir + "]";
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the Kafka cluster is closed");
    }
  }

  private synchronized TopicAdmin admin() {
    ensureOpen();
    if (admin == null) {
      throw new IllegalStateException("the embedded Kafka cluster was never started");
    }
    return admin;
  }

  private int checkIndex(int node) {
    if (node < 0 || node >= size()) {
      throw new IllegalArgumentException(
          "node must be between 0 and " + (size() - 1) + ", was " + node);
    }
    return node;
  }

  private KraftNode broker(int node) {
    checkIndex(node);
    if (brokers.isEmpty()) {
      throw new IllegalStateException("the embedded Kafka cluster was never started");
    }
    return brokers.get(node);
  }

  /** The dedicated controller first (brokers register with it), then the brokers. */
  private List<KraftNode> allNodes() {
    List<KraftNode> all = new ArrayList<>();
    controller.ifPresent(all::add);
    all.addAll(brokers);
    return all;
  }

  private Set<Integer> allBrokerIds() {
    Set<Integer> ids = new HashSet<>();
    IntStream.range(0, size()).forEach(ids::add);
    return ids;
  }

  /** Waits until the quorum has a leader and every broker in {@code ids} is registered. */
  private void awaitReady(Set<Integer> ids, long deadline) {
    awaitTrue(
        () ->
            admin.quorumHasLeader(ADMIN_WAIT)
                && admin.liveBrokers(ADMIN_WAIT).map(live -> live.containsAll(ids)).orElse(false),
        deadline,
        () ->
            "the Kafka cluster at "
                + bootstrapServers()
                + " has no quorum leader or not every broker of "
                + ids
                + " registered within "
                + settings.startupTimeout()
                + "; logs under "
                + dataDir);
  }

  private static void awaitTrue(
      BooleanSupplier condition, long deadline, java.util.function.Supplier<String> failure) {
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline >= 0) {
        throw new InfrastructureStartupException(failure.get());
      }
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
    }
  }

  private static Duration remaining(long deadline) {
    return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
  }

  /** Chooses ports and cluster id once, writes each node's configuration, builds the JVMs once. */
  private void prepare() {
    if (!brokers.isEmpty()) {
      return;
    }
    String classPath = settings.classPath().orElseGet(BrokerClassPath::resolve);
    int n = size();
    int controllers = settings.dedicatedController() ? 1 : n;
    Path stateFile = dataDir.resolve(STATE_FILE);
    Properties state = KraftNode.load(stateFile);
    if (state.containsKey("ports")) {
      ports =
          Arrays.stream(state.getProperty("ports").split(","))
              .mapToInt(Integer::parseInt)
              .toArray();
      clusterId = state.getProperty("cluster.id");
    } else {
      ports = FreePorts.pick(n + controllers);
      clusterId = Uuid.randomUuid().toString();
      state.setProperty(
          "ports",
          Arrays.stream(ports).mapToObj(Integer::toString).collect(Collectors.joining(",")));
      state.setProperty("cluster.id", clusterId);
      KraftNode.store(state, stateFile, "postbox-testkit: ports and cluster id");
    }
    if (settings.ownNetworks() && networks.isEmpty()) {
      networks = Optional.of(NodeNetworks.create(n + (settings.dedicatedController() ? 1 : 0)));
    }
    String voters =
        IntStream.range(0, controllers)
            .mapToObj(c -> controllerId(c) + "@" + host(controllerId(c)) + ":" + ports[n + c])
            .collect(Collectors.joining(","));
    List<KraftNode> nodes = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Map<String, String> p =
          KraftNode.baseProperties(
              settings.dedicatedController() ? "broker" : "broker,controller",
              i,
              voters,
              nodeDir("node-" + i),
              REPLICATION,
              MIN_ISR);
      String plain = "PLAINTEXT://" + host(i) + ":" + ports[i];
      p.put(
          "listeners",
          settings.dedicatedController()
              ? plain
              : plain + ",CONTROLLER://" + host(i) + ":" + ports[n + i]);
      p.put("advertised.listeners", plain);
      p.put("inter.broker.listener.name", "PLAINTEXT");
      p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
      p.put("default.replication.factor", Integer.toString(REPLICATION));
      p.put("min.insync.replicas", Integer.toString(MIN_ISR));
      p.put("unclean.leader.election.enable", "false");
      p.putAll(settings.brokerProperties());
      nodes.add(node("Kafka cluster broker " + i, i, "node-" + i, classPath, p));
    }
    if (settings.dedicatedController()) {
      Map<String, String> p =
          KraftNode.baseProperties(
              "controller", controllerId(0), voters, nodeDir("controller"), REPLICATION, MIN_ISR);
      p.put("listeners", "CONTROLLER://" + host(n) + ":" + ports[n]);
      p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
      // topic defaults are the controller's to apply (Kafka 4.x warns when only brokers set them)
      p.put("default.replication.factor", Integer.toString(REPLICATION));
      p.put("min.insync.replicas", Integer.toString(MIN_ISR));
      p.put("unclean.leader.election.enable", "false");
      p.putAll(settings.brokerProperties());
      controller = Optional.of(node("Kafka cluster controller", n, "controller", classPath, p));
    }
    admin = new TopicAdmin(bootstrapServers());
    brokers = List.copyOf(nodes);
  }

  /** A combined node's controller id is its broker id; the dedicated controller's is {@code n}. */
  private int controllerId(int c) {
    return settings.dedicatedController() ? size() : c;
  }

  /**
   * Where node {@code index} listens: its own namespace's address, or {@code 127.0.0.1}. Brokers
   * are {@code 0} to {@code size() - 1}, the dedicated controller is {@code size()}.
   */
  private String host(int index) {
    return networks.map(n -> n.address(index)).orElse(HOST);
  }

  private KraftNode node(
      String name, int index, String dir, String classPath, Map<String, String> props) {
    List<String> launcher = networks.map(n -> n.launcher(index)).orElse(List.of());
    return new KraftNode(
        name, nodeDir(dir), classPath, settings.maxHeap(), List.of(), props, launcher);
  }

  private Path nodeDir(String name) {
    try {
      return Files.createDirectories(dataDir.resolve(name));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dataDir.resolve(name), e);
    }
  }
}
