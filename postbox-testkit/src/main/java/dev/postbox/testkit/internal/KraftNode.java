package dev.postbox.testkit.internal;

import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.ChildJvmExitedException;
import dev.postbox.testkit.InfrastructureStartupException;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * One KRaft node (broker, controller or both) in its own JVM and data directory: writes its {@code
 * server.properties} and log4j configuration, formats its storage once, and starts, stops, kills
 * and pauses the JVM. The single broker ({@link EmbeddedKafkaBroker}) is one node; a cluster
 * ({@link EmbeddedKafkaCluster}) is several. Not thread-safe: its owner serialises the calls.
 */
public final class KraftNode {

  /** The line that {@code kafka.server.KafkaRaftServer} logs when the node is up. */
  public static final String STARTED_LINE = "Kafka Server started";

  private static final Duration FORMAT_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration STOP_GRACE = Duration.ofSeconds(30);

  private final String name;
  private final Path dataDir;
  private final String classPath;
  private final List<String> jvmOptions;
  private final ChildJvm jvm;

  /**
   * Writes the node's configuration into {@code dataDir} and builds (does not start) its JVM.
   *
   * @param name how messages name the node, for example {@code Kafka broker}
   */
  public KraftNode(
      String name,
      Path dataDir,
      String classPath,
      String maxHeap,
      List<String> extraJvmOptions,
      Map<String, String> serverProperties) {
    this(name, dataDir, classPath, maxHeap, extraJvmOptions, serverProperties, List.of());
  }

  /**
   * As above; {@code launcher} runs the JVM (for example {@code ip netns exec <namespace>}), or is
   * empty.
   */
  public KraftNode(
      String name,
      Path dataDir,
      String classPath,
      String maxHeap,
      List<String> extraJvmOptions,
      Map<String, String> serverProperties,
      List<String> launcher) {
    this.name = name;
    this.dataDir = dataDir;
    this.classPath = classPath;
    this.jvmOptions = List.copyOf(extraJvmOptions);
    Properties props = new Properties();
    props.putAll(serverProperties);
    store(props, serverPropertiesFile(), "written by postbox-testkit");
    writeLog4jConfig();
    this.jvm =
        ChildJvm.builder("kafka.Kafka")
            .classPath(classPath)
            .jvmOptions(jvmOptions(maxHeap).toArray(String[]::new))
            .systemProperty("log4j2.configurationFile", log4jConfigFile().toString())
            .args(serverPropertiesFile().toString())
            .workingDirectory(dataDir)
            .launcher(launcher.toArray(String[]::new))
            .log(log())
            .build();
  }

  /**
   * The settings every test node shares: its role and id, the quorum, the log directory under the
   * data directory, the internal topics' replication and minimum ISR, no automatic topic creation,
   * no initial rebalance delay, and short broker session timeouts (a restart after {@code kill -9}
   * takes seconds). The listeners are the caller's.
   */
  public static Map<String, String> baseProperties(
      String roles, int nodeId, String quorumVoters, Path dataDir, int replication, int minIsr) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("process.roles", roles);
    p.put("node.id", Integer.toString(nodeId));
    p.put("controller.quorum.voters", quorumVoters);
    p.put("controller.listener.names", "CONTROLLER");
    p.put("log.dirs", dataDir.resolve("kraft").toString());
    String rf = Integer.toString(replication);
    String isr = Integer.toString(minIsr);
    p.put("offsets.topic.replication.factor", rf);
    p.put("offsets.topic.num.partitions", "10");
    p.put("transaction.state.log.replication.factor", rf);
    p.put("transaction.state.log.min.isr", isr);
    p.put("transaction.state.log.num.partitions", "10");
    p.put("share.coordinator.state.topic.replication.factor", rf);
    p.put("share.coordinator.state.topic.min.isr", isr);
    p.put("group.initial.rebalance.delay.ms", "0");
    p.put("broker.session.timeout.ms", "3000");
    p.put("broker.heartbeat.interval.ms", "500");
    p.put("auto.create.topics.enable", "false");
    p.put("num.partitions", "1");
    return p;
  }

  /**
   * Formats the storage unless it is formatted already.
   *
   * @return how long formatting took, or empty if the storage was formatted already
   * @throws InfrastructureStartupException if the storage tool failed or took too long
   */
  public Optional<Duration> formatIfNeeded(String clusterId, List<String> extraArgs) {
    if (Files.exists(dataDir.resolve("kraft").resolve("meta.properties"))) {
      return Optional.empty();
    }
    long t0 = System.nanoTime();
    List<String> args =
        new ArrayList<>(
            List.of(
                "format",
                "--ignore-formatted",
                "-t",
                clusterId,
                "-c",
                serverPropertiesFile().toString()));
    args.addAll(extraArgs);
    ChildJvm format =
        ChildJvm.builder("kafka.tools.StorageTool")
            .classPath(classPath)
            .jvmOptions(jvmOptions("256m").toArray(String[]::new))
            .systemProperty("log4j2.configurationFile", log4jConfigFile().toString())
            .args(args.toArray(String[]::new))
            .workingDirectory(dataDir)
            .log(dataDir.resolve("format.log"))
            .start();
    Optional<Integer> code = format.waitFor(FORMAT_TIMEOUT);
    if (code.isEmpty()) {
      format.kill();
    }
    if (code.isEmpty() || code.get() != 0) {
      throw new InfrastructureStartupException(
          "Formatting the storage of the "
              + name
              + (code.isEmpty()
                  ? " took longer than " + FORMAT_TIMEOUT
                  : " failed (exit " + code.get() + ")")
              + "; log "
              + format.log()
              + " ends with:\n"
              + format.logTail(40));
    }
    return Optional.of(Duration.ofNanos(System.nanoTime() - t0));
  }

  /** Starts the JVM and returns at once; see {@link #awaitStarted}. */
  public void launch() {
    jvm.start();
  }

  /**
   * Waits until the current run logged {@value #STARTED_LINE}; kills the JVM if it did not in time.
   *
   * @throws InfrastructureStartupException if it exited or did not start in time
   */
  public void awaitStarted(Duration timeout) {
    try {
      jvm.awaitLogLine(STARTED_LINE, timeout);
    } catch (ChildJvmExitedException e) {
      throw new InfrastructureStartupException(
          "The " + name + " exited during start-up: " + e.getMessage(), e);
    } catch (LogLineTimeoutException e) {
      jvm.kill();
      throw new InfrastructureStartupException(
          "The " + name + " did not start within " + timeout + ": " + e.getMessage(), e);
    }
  }

  /**
   * Stops the node with {@code SIGTERM} (controlled shutdown), {@code kill -9} after 30 seconds.
   *
   * @return the exit code
   */
  public int terminate() {
    return jvm.terminate(STOP_GRACE);
  }

  /** Kills the JVM with {@code kill -9} and waits until it is gone. */
  public void kill() {
    jvm.kill();
  }

  /** Freezes the JVM ({@code SIGSTOP}). */
  public void pause() {
    jvm.pause();
  }

  /** Continues a frozen JVM ({@code SIGCONT}). */
  public void resume() {
    jvm.resume();
  }

  public boolean isAlive() {
    return jvm.isAlive();
  }

  public boolean isPaused() {
    return jvm.isPaused();
  }

  public long pid() {
    return jvm.pid();
  }

  /** The node's log (standard output and standard error of every run). */
  public Path log() {
    return dataDir.resolve("broker.log");
  }

  /** The last {@code lines} lines of the current run's log. */
  public String logTail(int lines) {
    return jvm.logTail(lines);
  }

  /** Reads a properties file, empty if it does not exist. */
  public static Properties load(Path file) {
    Properties p = new Properties();
    if (Files.exists(file)) {
      try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
        p.load(r);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file, e);
      }
    }
    return p;
  }

  /** Writes a properties file. */
  public static void store(Properties p, Path file, String comment) {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      p.store(w, comment);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
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
    options.addAll(jvmOptions);
    return options;
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

  private Path serverPropertiesFile() {
    return dataDir.resolve("server.properties");
  }

  private Path log4jConfigFile() {
    return dataDir.resolve("log4j2.properties");
  }
}
