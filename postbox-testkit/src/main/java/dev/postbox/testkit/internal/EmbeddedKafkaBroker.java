package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaSaslSslListener;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A single-node KRaft broker in a child JVM. Thread-safe (lifecycle methods are serialized). */
public final class EmbeddedKafkaBroker implements KafkaBroker {

  /** Configuration of an embedded broker; see {@link KafkaBroker.Builder}. */
  public record Settings(
      Optional<Path> dataDirectory,
      String maxHeap,
      Duration startupTimeout,
      Map<String, String> brokerProperties,
      List<String> jvmOptions,
      Optional<String> classPath,
      String host,
      Optional<String> scramUser,
      Optional<String> scramPassword) {
    public Settings {
      brokerProperties = Collections.unmodifiableMap(new LinkedHashMap<>(brokerProperties));
      jvmOptions = List.copyOf(jvmOptions);
    }
  }

  private static final Logger LOG = LoggerFactory.getLogger(KafkaBroker.class);
  private static final String STATE_FILE = "testkit.properties";

  private final Settings settings;
  private final Path dataDir;
  private final boolean temporary;

  private int port;
  private int controllerPort;
  private int saslPort;
  private TlsMaterial tls;
  private String clusterId;
  private volatile KraftNode node;
  private TopicAdmin admin;
  private String lastStop = "none";
  private volatile Optional<Duration> lastStartupTime = Optional.empty();
  private volatile boolean closed;

  public EmbeddedKafkaBroker(Settings settings) {
    this.settings = settings;
    this.temporary = settings.dataDirectory().isEmpty();
    this.dataDir = OwnedDirectories.createOrUse(settings.dataDirectory(), "kafka-");
  }

  @Override
  public synchronized String bootstrapServers() {
    if (port == 0) {
      throw new IllegalStateException(
          "the embedded Kafka broker was never started, so it has no port yet: call start()");
    }
    return settings.host() + ":" + port;
  }

  @Override
  public synchronized Optional<KafkaSaslSslListener> saslSsl() {
    if (settings.scramUser().isEmpty()) {
      return Optional.empty();
    }
    if (saslPort == 0) {
      throw new IllegalStateException(
          "the embedded Kafka broker was never started, so it has no port yet: call start()");
    }
    return Optional.of(
        new KafkaSaslSslListener(
            settings.host() + ":" + saslPort,
            settings.scramUser().get(),
            settings.scramPassword().orElseThrow(),
            tls.trustStore(),
            tls.password()));
  }

  @Override
  public boolean isExternal() {
    return false;
  }

  @Override
  public synchronized void start() {
    ensureOpen();
    if (node != null && node.isAlive()) {
      return;
    }
    prepare(); // may fetch the broker's jars first (minutes): not part of the start-up timeout
    long t0 = System.nanoTime();
    Optional<Duration> formatted = node.formatIfNeeded(clusterId, formatArgs());
    node.launch();
    long deadline = t0 + settings.startupTimeout().toNanos();
    node.awaitStarted(remaining(deadline));
    while (!admin.clusterAnswers(Duration.ofSeconds(2))) {
      if (!node.isAlive() || System.nanoTime() - deadline >= 0) {
        String tail = node.logTail(40);
        node.kill();
        throw new InfrastructureStartupException(
            "The Kafka broker at "
                + bootstrapServers()
                + " logged '"
                + KraftNode.STARTED_LINE
                + "' but did not answer describeCluster within "
                + settings.startupTimeout()
                + "; log "
                + node.log()
                + " ends with:\n"
                + tail);
      }
    }
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    lastStartupTime = Optional.of(took);
    LOG.info(
        "Kafka broker {} (pid {}) ready in {} ms ({}{}); data {}",
        bootstrapServers(),
        node.pid(),
        took.toMillis(),
        formatted.isPresent() ? "first start" : "restart after " + lastStop,
        formatted.map(d -> ", storage format " + d.toMillis() + " ms").orElse(""),
        dataDir);
  }

  @Override
  public synchronized void stop() {
    if (node != null && node.isAlive()) {
      long t0 = System.nanoTime();
      int code = node.terminate();
      lastStop = "clean stop";
      LOG.info(
          "Kafka broker {} stopped in {} ms (exit code {})",
          bootstrapServers(),
          Duration.ofNanos(System.nanoTime() - t0).toMillis(),
          code);
    }
  }

  @Override
  public synchronized void kill() {
    if (node != null && node.isAlive()) {
      node.kill();
      lastStop = "kill -9";
      LOG.info("Kafka broker {} killed (kill -9)", bootstrapServers());
    }
  }

  @Override
  public synchronized void restart() {
    stop();
    start();
  }

  @Override
  public synchronized void pause() {
    requireRunning("pause").pause();
  }

  @Override
  public synchronized void resume() {
    requireRunning("resume").resume();
  }

  @Override
  public boolean isRunning() {
    KraftNode j = node;
    return j != null && j.isAlive();
  }

  @Override
  public boolean isPaused() {
    KraftNode j = node;
    return j != null && j.isPaused();
  }

  @Override
  public void createTopic(String name, int partitions) {
    createTopic(name, partitions, Map.of());
  }

  @Override
  public void createTopic(String name, int partitions, Map<String, String> config) {
    TopicAdmin a;
    synchronized (this) {
      ensureOpen();
      if (admin == null) {
        throw new IllegalStateException("the embedded Kafka broker was never started");
      }
      a = admin;
    }
    a.createTopic(name, partitions, config);
  }

  @Override
  public Optional<Path> dataDirectory() {
    return Optional.of(dataDir);
  }

  @Override
  public Optional<Path> log() {
    return Optional.of(dataDir.resolve("broker.log"));
  }

  @Override
  public Optional<Duration> lastStartupTime() {
    return lastStartupTime;
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
    if (temporary) {
      if (node != null) {
        node.kill();
      }
      OwnedDirectories.delete(dataDir);
    } else {
      stop();
    }
  }

  @Override
  public String toString() {
    return "KafkaBroker[embedded "
        + (port == 0 ? "not started" : settings.host() + ":" + port)
        + "]";
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the Kafka broker is closed");
    }
  }

  private KraftNode requireRunning(String operation) {
    if (node == null || !node.isAlive()) {
      throw new IllegalStateException("cannot " + operation + ": the Kafka broker is not running");
    }
    return node;
  }

  private static Duration remaining(long deadline) {
    return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
  }

  /** Chooses ports and cluster id once, writes the configuration, builds the JVM once. */
  private void prepare() {
    if (node != null) {
      return;
    }
    String classPath = settings.classPath().orElseGet(BrokerClassPath::resolve);
    Path stateFile = dataDir.resolve(STATE_FILE);
    Properties state = KraftNode.load(stateFile);
    if (state.containsKey("port")) {
      port = Integer.parseInt(state.getProperty("port"));
      controllerPort = Integer.parseInt(state.getProperty("controller.port"));
      saslPort = Integer.parseInt(state.getProperty("sasl.port", "0"));
      clusterId = state.getProperty("cluster.id");
    } else {
      int[] ports = FreePorts.pick(3);
      port = ports[0];
      controllerPort = ports[1];
      saslPort = settings.scramUser().isPresent() ? ports[2] : 0;
      clusterId = Uuid.randomUuid().toString();
      state.setProperty("port", Integer.toString(port));
      state.setProperty("controller.port", Integer.toString(controllerPort));
      state.setProperty("sasl.port", Integer.toString(saslPort));
      state.setProperty("cluster.id", clusterId);
      KraftNode.store(state, stateFile, "postbox-testkit: ports and cluster id");
    }
    if (settings.scramUser().isPresent()) {
      if (saslPort == 0) {
        throw new IllegalStateException(
            "the data directory "
                + dataDir
                + " belongs to a broker started without a SASL_SSL listener");
      }
      tls = TlsMaterial.inDirectory(dataDir.resolve("tls"), settings.host());
    }
    admin = new TopicAdmin(settings.host() + ":" + port);
    node =
        new KraftNode(
            "Kafka broker",
            dataDir,
            classPath,
            settings.maxHeap(),
            settings.jvmOptions(),
            serverProperties());
  }

  private List<String> formatArgs() {
    if (settings.scramUser().isEmpty()) {
      return List.of();
    }
    return List.of(
        "--add-scram",
        "SCRAM-SHA-512=[name="
            + settings.scramUser().get()
            + ",password="
            + settings.scramPassword().orElseThrow()
            + "]");
  }

  private Map<String, String> serverProperties() {
    String host = settings.host();
    Map<String, String> p =
        KraftNode.baseProperties(
            "broker,controller", 1, "1@" + host + ":" + controllerPort, dataDir, 1, 1);
    String plain = "PLAINTEXT://" + host + ":" + port;
    String sasl = saslPort == 0 ? "" : ",SASL_SSL://" + host + ":" + saslPort;
    p.put("listeners", plain + sasl + ",CONTROLLER://" + host + ":" + controllerPort);
    p.put("advertised.listeners", plain + sasl);
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put(
        "listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT" + (saslPort == 0 ? "" : ",SASL_SSL:SASL_SSL"));
    if (saslPort != 0) {
      p.put("sasl.enabled.mechanisms", "SCRAM-SHA-512");
      p.put(
          "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
          "org.apache.kafka.common.security.scram.ScramLoginModule required;");
      p.put("ssl.keystore.type", "PKCS12");
      p.put("ssl.keystore.location", tls.keyStore().toString());
      p.put("ssl.keystore.password", tls.password());
      p.put("ssl.key.password", tls.password());
    }
    p.putAll(settings.brokerProperties());
    return p;
  }
}
