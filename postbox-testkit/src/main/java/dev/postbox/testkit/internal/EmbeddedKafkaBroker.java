package dev.postbox.testkit.internal;

import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.ChildJvmExitedException;
import dev.postbox.testkit.InfrastructureStartupException;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaSaslSslListener;
import dev.postbox.testkit.LogLineTimeoutException;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
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

  /** The line that {@code kafka.server.KafkaRaftServer} logs when the broker is up. */
  public static final String STARTED_LINE = "Kafka Server started";

  private static final Logger LOG = LoggerFactory.getLogger(KafkaBroker.class);
  private static final Duration FORMAT_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration STOP_GRACE = Duration.ofSeconds(30);
  private static final String STATE_FILE = "testkit.properties";

  private final Settings settings;
  private final Path dataDir;
  private final boolean temporary;

  private int port;
  private int controllerPort;
  private int saslPort;
  private TlsMaterial tls;
  private String clusterId;
  private String classPath;
  private volatile ChildJvm jvm;
  private TopicAdmin admin;
  private String lastStop = "none";
  private volatile Optional<Duration> lastStartupTime = Optional.empty();
  private volatile boolean closed;

  public EmbeddedKafkaBroker(Settings settings) {
    this.settings = settings;
    this.temporary = settings.dataDirectory().isEmpty();
    if (temporary) {
      this.dataDir = OwnedDirectories.create("kafka-");
    } else {
      try {
        this.dataDir = Files.createDirectories(settings.dataDirectory().get());
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create the broker's data directory", e);
      }
    }
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
    if (jvm != null && jvm.isAlive()) {
      return;
    }
    prepare(); // may fetch the broker's jars first (minutes): not part of the start-up timeout
    long t0 = System.nanoTime();
    Optional<Duration> formatted = formatIfNeeded();
    jvm.start();
    long deadline = t0 + settings.startupTimeout().toNanos();
    try {
      jvm.awaitLogLine(STARTED_LINE, remaining(deadline));
    } catch (ChildJvmExitedException e) {
      throw new InfrastructureStartupException(
          "The Kafka broker exited during start-up: " + e.getMessage(), e);
    } catch (LogLineTimeoutException e) {
      jvm.kill();
      throw new InfrastructureStartupException(
          "The Kafka broker did not start within "
              + settings.startupTimeout()
              + ": "
              + e.getMessage(),
          e);
    }
    while (!admin.clusterAnswers(Duration.ofSeconds(2))) {
      if (!jvm.isAlive() || System.nanoTime() - deadline >= 0) {
        String tail = jvm.logTail(40);
        jvm.kill();
        throw new InfrastructureStartupException(
            "The Kafka broker at "
                + bootstrapServers()
                + " logged '"
                + STARTED_LINE
                + "' but did not answer describeCluster within "
                + settings.startupTimeout()
                + "; log "
                + jvm.log()
                + " ends with:\n"
                + tail);
      }
    }
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    lastStartupTime = Optional.of(took);
    LOG.info(
        "Kafka broker {} (pid {}) ready in {} ms ({}{}); data {}",
        bootstrapServers(),
        jvm.pid(),
        took.toMillis(),
        formatted.isPresent() ? "first start" : "restart after " + lastStop,
        formatted.map(d -> ", storage format " + d.toMillis() + " ms").orElse(""),
        dataDir);
  }

  @Override
  public synchronized void stop() {
    if (jvm != null && jvm.isAlive()) {
      long t0 = System.nanoTime();
      int code = jvm.terminate(STOP_GRACE);
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
    if (jvm != null && jvm.isAlive()) {
      jvm.kill();
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
    ChildJvm j = jvm;
    return j != null && j.isAlive();
  }

  @Override
  public boolean isPaused() {
    ChildJvm j = jvm;
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
      if (jvm != null) {
        jvm.kill();
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

  private ChildJvm requireRunning(String operation) {
    if (jvm == null || !jvm.isAlive()) {
      throw new IllegalStateException("cannot " + operation + ": the Kafka broker is not running");
    }
    return jvm;
  }

  private static Duration remaining(long deadline) {
    return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
  }

  /** Chooses ports and cluster id once, writes the configuration, builds the JVM once. */
  private void prepare() {
    if (jvm != null) {
      return;
    }
    classPath = settings.classPath().orElseGet(BrokerClassPath::resolve);
    Properties state = loadState();
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
      store(state, dataDir.resolve(STATE_FILE), "postbox-testkit: ports and cluster id");
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
    store(serverProperties(), serverPropertiesFile(), "written by postbox-testkit");
    writeLog4jConfig();
    admin = new TopicAdmin(settings.host() + ":" + port);
    jvm =
        ChildJvm.builder("kafka.Kafka")
            .classPath(classPath)
            .jvmOptions(jvmOptions(settings.maxHeap()).toArray(String[]::new))
            .systemProperty("log4j2.configurationFile", log4jConfigFile().toString())
            .args(serverPropertiesFile().toString())
            .workingDirectory(dataDir)
            .log(log().orElseThrow())
            .build();
  }

  private Optional<Duration> formatIfNeeded() {
    if (Files.exists(kraftDir().resolve("meta.properties"))) {
      return Optional.empty();
    }
    long t0 = System.nanoTime();
    ChildJvm format =
        ChildJvm.builder("kafka.tools.StorageTool")
            .classPath(classPath)
            .jvmOptions(jvmOptions("256m").toArray(String[]::new))
            .systemProperty("log4j2.configurationFile", log4jConfigFile().toString())
            .args(formatArgs().toArray(String[]::new))
            .workingDirectory(dataDir)
            .log(dataDir.resolve("format.log"))
            .start();
    Optional<Integer> code = format.waitFor(FORMAT_TIMEOUT);
    if (code.isEmpty()) {
      format.kill();
    }
    if (code.isEmpty() || code.get() != 0) {
      throw new InfrastructureStartupException(
          "Formatting the Kafka broker's storage "
              + (code.isEmpty()
                  ? "took longer than " + FORMAT_TIMEOUT
                  : "failed (exit " + code.get() + ")")
              + "; log "
              + format.log()
              + " ends with:\n"
              + format.logTail(40));
    }
    return Optional.of(Duration.ofNanos(System.nanoTime() - t0));
  }

  private List<String> formatArgs() {
    List<String> args =
        new ArrayList<>(
            List.of(
                "format",
                "--ignore-formatted",
                "-t",
                clusterId,
                "-c",
                serverPropertiesFile().toString()));
    if (settings.scramUser().isPresent()) {
      args.add("--add-scram");
      args.add(
          "SCRAM-SHA-512=[name="
              + settings.scramUser().get()
              + ",password="
              + settings.scramPassword().orElseThrow()
              + "]");
    }
    return args;
  }

  private List<String> jvmOptions(String maxHeap) {
    List<String> options = new ArrayList<>();
    options.add("-Xmx" + maxHeap);
    options.add("-XX:+UseG1GC");
    options.add("-XX:MaxGCPauseMillis=20");
    options.add("-XX:+ExitOnOutOfMemoryError");
    options.add("-Djava.awt.headless=true");
    if (Runtime.version().feature() >= 24) {
      // Kafka 4.4 calls sun.misc.Unsafe and loads native compression libraries: silence JDK 24+.
      options.add("--enable-native-access=ALL-UNNAMED");
      options.add("--sun-misc-unsafe-memory-access=allow");
    }
    options.addAll(settings.jvmOptions());
    return options;
  }

  private Properties serverProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("process.roles", "broker,controller");
    p.put("node.id", "1");
    String host = settings.host();
    p.put("controller.quorum.voters", "1@" + host + ":" + controllerPort);
    String plain = "PLAINTEXT://" + host + ":" + port;
    String sasl = saslPort == 0 ? "" : ",SASL_SSL://" + host + ":" + saslPort;
    p.put("listeners", plain + sasl + ",CONTROLLER://" + host + ":" + controllerPort);
    p.put("advertised.listeners", plain + sasl);
    p.put("controller.listener.names", "CONTROLLER");
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
    p.put("log.dirs", kraftDir().toString());
    p.put("offsets.topic.replication.factor", "1");
    p.put("offsets.topic.num.partitions", "10");
    p.put("transaction.state.log.replication.factor", "1");
    p.put("transaction.state.log.min.isr", "1");
    p.put("transaction.state.log.num.partitions", "10");
    p.put("share.coordinator.state.topic.replication.factor", "1");
    p.put("share.coordinator.state.topic.min.isr", "1");
    p.put("group.initial.rebalance.delay.ms", "0");
    p.put("broker.session.timeout.ms", "3000");
    p.put("broker.heartbeat.interval.ms", "500");
    p.put("auto.create.topics.enable", "false");
    p.put("num.partitions", "1");
    p.putAll(settings.brokerProperties());
    Properties props = new Properties();
    props.putAll(p);
    return props;
  }

  private void writeLog4jConfig() {
    String config =
        String.join(
            "\n",
            "# written by postbox-testkit: warnings and the start-up line to standard output,",
            "# which the test kit appends to broker.log",
            "status = warn",
            "appender.out.type = Console",
            "appender.out.name = STDOUT",
            "appender.out.layout.type = PatternLayout",
            "appender.out.layout.pattern = [%d] %p %m (%c)%n",
            "rootLogger.level = WARN",
            "rootLogger.appenderRef.out.ref = STDOUT",
            "logger.started.name = kafka.server.KafkaRaftServer",
            "logger.started.level = INFO",
            "");
    try {
      Files.writeString(log4jConfigFile(), config, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + log4jConfigFile(), e);
    }
  }

  private Path kraftDir() {
    return dataDir.resolve("kraft");
  }

  private Path serverPropertiesFile() {
    return dataDir.resolve("server.properties");
  }

  private Path log4jConfigFile() {
    return dataDir.resolve("log4j2.properties");
  }

  private Properties loadState() {
    Properties p = new Properties();
    Path file = dataDir.resolve(STATE_FILE);
    if (Files.exists(file)) {
      try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
        p.load(r);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file, e);
      }
    }
    return p;
  }

  private static void store(Properties p, Path file, String comment) {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      p.store(w, comment);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }
}
