package dev.postbox.testkit;

import dev.postbox.testkit.internal.FreePorts;
import dev.postbox.testkit.internal.OwnedDirectories;
import dev.postbox.testkit.internal.RabbitCtl;
import dev.postbox.testkit.internal.Shutdown;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A RabbitMQ server for tests: a private node started as a child process from the machine's
 * RabbitMQ installation, which a test can stop, kill with {@code kill -9} and start again (same
 * ports, same data); or an external broker given by {@value #URL_ENV} ({@code
 * amqp://user:password@host:port/vhost}), which a test can only use.
 *
 * <p>A private node has its own node name ({@code postbox-<port>@localhost}), AMQP port and Erlang
 * distribution port (both free ports, chosen once and kept across restarts), its own data, log,
 * plugins file (the consistent-hash exchange enabled) and configuration file in a directory under
 * the test kit's per-user folder, and {@code HOME} set there so its Erlang cookie stays there too.
 * It is killed at JVM exit; one left behind by a JVM killed with {@code kill -9} is stopped by the
 * next test kit JVM that sweeps that folder. Its guest user ({@code guest}/{@code guest}) may log
 * in from 127.0.0.1, where it listens.
 *
 * <p>The script started is {@value #BINARY_ENV} if set, else Debian's {@value #DEBIAN_SCRIPT} (the
 * real script behind {@code /usr/sbin/rabbitmq-server}, whose wrapper would switch to the {@code
 * rabbitmq} user when run as root and could not write the per-user folder), else {@code
 * rabbitmq-server} on the {@code PATH}.
 *
 * <p>{@link #sharedOrSkip()} is what tests call: the JVM's shared server, started on first use.
 * Where there is neither a RabbitMQ installation nor {@value #URL_ENV}, the test is skipped (a
 * JUnit assumption) with one line that says why; in CI (the {@code CI} environment variable set) it
 * fails instead, so a CI machine without RabbitMQ cannot pass by skipping. A node boots in about 20
 * s on a loaded two-core machine.
 *
 * <p>Thread-safe.
 */
public final class RabbitMqServer implements AutoCloseable {

  /**
   * Environment variable naming an external broker, for example {@code
   * amqp://guest:guest@127.0.0.1:5672/%2F}.
   */
  public static final String URL_ENV = "POSTBOX_RABBITMQ_URL";

  /** Environment variable naming the {@code rabbitmq-server} script to start. */
  public static final String BINARY_ENV = "POSTBOX_RABBITMQ_SERVER";

  /** Debian's RabbitMQ start script, without the wrapper that changes the user. */
  public static final String DEBIAN_SCRIPT = "/usr/lib/rabbitmq/bin/rabbitmq-server";

  /** The file in a private node's directory that holds its Erlang VM's process id. */
  public static final String PID_FILE = "rabbitmq-beam.pid";

  /** How long {@link #start()} waits for the AMQP port of a private node. */
  public static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(120);

  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqServer.class);
  private static final Object LOCK = new Object();
  private static RabbitMqServer shared;
  private static String unavailable;

  private final String uri;
  private final Optional<Node> node;
  private Process process;
  private boolean booted;
  private final Runnable onExit = this::close;
  private boolean closed;

  private RabbitMqServer(String uri, Optional<Node> node) {
    this.uri = uri;
    this.node = node;
  }

  /** A private node's fixed parts: script, ports, directory. */
  private record Node(
      Path script,
      int amqpPort,
      int distPort,
      Path dir,
      List<String> alsoListenOn,
      Optional<RabbitTlsListener> tls) {
    String name() {
      return "postbox-" + amqpPort + "@localhost";
    }
  }

  /**
   * The JVM's shared RabbitMQ server (external if {@value #URL_ENV} is set, else a private node
   * started now), or the test is skipped when none is available outside CI.
   *
   * @throws InfrastructureStartupException in CI when no server is available, or if one could not
   *     be started
   */
  public static RabbitMqServer sharedOrSkip() {
    synchronized (LOCK) {
      if (shared != null) {
        return shared;
      }
      Map<String, String> env = System.getenv();
      if (unavailable == null) {
        Optional<String> url = value(env, URL_ENV);
        if (url.isPresent()) {
          shared = external(url.get());
          return shared;
        }
        Optional<Path> script = findScript(env);
        if (script.isPresent()) {
          shared = startPrivate(script.get());
          return shared;
        }
        unavailable =
            "RabbitMQ tests skipped: no rabbitmq-server installed (looked for "
                + BINARY_ENV
                + ", "
                + DEBIAN_SCRIPT
                + " and the PATH) and "
                + URL_ENV
                + " is not set";
        if (value(env, "CI").isEmpty()) {
          LOG.warn(unavailable);
        }
      }
      if (value(env, "CI").isPresent()) {
        throw new InfrastructureStartupException(
            "CI is set and RabbitMQ is missing: install rabbitmq-server or set " + URL_ENV);
      }
      Assumptions.abort(unavailable);
      throw new AssertionError("unreachable");
    }
  }

  /** An external broker at {@code uri}: {@link #start()}, {@link #kill()} and such refuse. */
  public static RabbitMqServer external(String uri) {
    return new RabbitMqServer(uri, Optional.empty());
  }

  /**
   * Starts a private node from {@code script} on free ports in a new directory under the test kit's
   * folder and waits until it answers the AMQP handshake. {@link #close()} kills it and deletes its
   * directory.
   *
   * @throws InfrastructureStartupException if it did not come up within {@link #STARTUP_TIMEOUT}
   */
  public static RabbitMqServer startPrivate(Path script) {
    return startPrivate(script, List.of());
  }

  /**
   * {@link #startPrivate(Path)}, listening on the same port on each of {@code alsoListenOn} (IPv4
   * addresses of this host) as well as on 127.0.0.1; then its guest user may log in from anywhere
   * (a test node: a fault-injection harness's processes in network namespaces reach it that way).
   * {@link #uri()} still names 127.0.0.1.
   *
   * @throws InfrastructureStartupException if it did not come up within {@link #STARTUP_TIMEOUT}
   */
  public static RabbitMqServer startPrivate(Path script, List<String> alsoListenOn) {
    for (String a : alsoListenOn) {
      if (!a.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
        throw new IllegalArgumentException("not an IPv4 address: " + a);
      }
    }
    int[] ports = FreePorts.pick(2);
    Path dir = OwnedDirectories.create("rabbitmq-");
    RabbitMqServer server =
        new RabbitMqServer(
            "amqp://guest:guest@127.0.0.1:" + ports[0] + "/%2F",
            Optional.of(
                new Node(
                    script, ports[0], ports[1], dir, List.copyOf(alsoListenOn), Optional.empty())));
    Shutdown.runOnExit(server.onExit);
    server.writeConfiguration();
    server.start();
    return server;
  }

  /**
   * {@link #startPrivate(Path)} with a TLS listener on 127.0.0.1 as well ({@link #tlsListener()}):
   * a throwaway self-signed certificate naming {@code localhost} and {@code 127.0.0.1}, no client
   * certificate asked for. A node of its own: the shared one has no TLS listener.
   *
   * @throws InfrastructureStartupException if it did not come up within {@link #STARTUP_TIMEOUT}
   */
  public static RabbitMqServer startPrivateWithTls(Path script) {
    int[] ports = FreePorts.pick(3);
    Path dir = OwnedDirectories.create("rabbitmq-tls-");
    dev.postbox.testkit.internal.TlsMaterial material =
        dev.postbox.testkit.internal.TlsMaterial.inDirectory(dir.resolve("tls"), "127.0.0.1");
    RabbitTlsListener tls =
        new RabbitTlsListener("127.0.0.1", ports[2], material.trustStore(), material.password());
    RabbitMqServer server =
        new RabbitMqServer(
            "amqp://guest:guest@127.0.0.1:" + ports[0] + "/%2F",
            Optional.of(new Node(script, ports[0], ports[1], dir, List.of(), Optional.of(tls))));
    Shutdown.runOnExit(server.onExit);
    List<Path> pem = material.pemFiles();
    server.writeConfiguration(
        List.of(
            "listeners.ssl.default = 127.0.0.1:" + tls.port(),
            "ssl_options.cacertfile = " + pem.get(0),
            "ssl_options.certfile = " + pem.get(0),
            "ssl_options.keyfile = " + pem.get(1),
            "ssl_options.verify = verify_none",
            "ssl_options.fail_if_no_peer_cert = false"));
    server.start();
    return server;
  }

  /** The TLS listener of a node started with {@link #startPrivateWithTls}; empty otherwise. */
  public Optional<RabbitTlsListener> tlsListener() {
    return node.flatMap(Node::tls);
  }

  /** The broker's URI, {@code amqp://user:password@host:port/vhost}. */
  public String uri() {
    return uri;
  }

  /** Whether this is an external broker (no lifecycle control). */
  public boolean isExternal() {
    return node.isEmpty();
  }

  /** A private node's directory (data, logs, configuration). */
  public Optional<Path> directory() {
    return node.map(Node::dir);
  }

  /** A private node's log folder. */
  public Optional<Path> logDirectory() {
    return node.map(n -> n.dir().resolve("log"));
  }

  /**
   * Starts a private node (again: same ports, same data) and waits for its AMQP handshake; when it
   * is started again, also until each of its quorum queues has a leader, triggering an election
   * where there is none (RabbitMQ 3.10 leaves some single-node quorum queues leaderless after
   * {@code kill -9}; see docs/guides/rabbitmq.md). Does nothing if it is running.
   *
   * @throws InfrastructureStartupException if it did not come up within {@link #STARTUP_TIMEOUT}
   */
  public synchronized void start() {
    Node n = privateNode("start");
    if (closed) {
      throw new IllegalStateException("closed");
    }
    if (process != null && process.isAlive()) {
      return;
    }
    long begin = System.nanoTime();
    try {
      ProcessBuilder pb =
          new ProcessBuilder(List.of(n.script().toString()))
              .directory(n.dir().toFile())
              .redirectErrorStream(true)
              .redirectOutput(
                  ProcessBuilder.Redirect.appendTo(n.dir().resolve("out.log").toFile()));
      Map<String, String> env = pb.environment();
      env.put("HOME", n.dir().toString());
      env.put("RABBITMQ_NODENAME", n.name());
      if (n.alsoListenOn().isEmpty()) {
        env.put("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1");
        env.put("RABBITMQ_NODE_PORT", Integer.toString(n.amqpPort()));
      } else {
        // these would replace the configuration file's listeners with one
        env.remove("RABBITMQ_NODE_IP_ADDRESS");
        env.remove("RABBITMQ_NODE_PORT");
      }
      env.put("RABBITMQ_DIST_PORT", Integer.toString(n.distPort()));
      env.put("RABBITMQ_MNESIA_BASE", n.dir().resolve("mnesia").toString());
      env.put("RABBITMQ_LOG_BASE", n.dir().resolve("log").toString());
      env.put("RABBITMQ_ENABLED_PLUGINS_FILE", n.dir().resolve("enabled_plugins").toString());
      env.put("RABBITMQ_CONFIG_FILE", n.dir().resolve("rabbitmq").toString());
      env.put("RABBITMQ_PID_FILE", n.dir().resolve("rabbitmq.pid").toString());
      env.remove("RABBITMQ_CONF_ENV_FILE");
      Process p = pb.start();
      process = p;
      Shutdown.killOnExit(p);
      long deadline = begin + STARTUP_TIMEOUT.toNanos();
      while (!answersAmqp(n.amqpPort())) {
        if (!p.isAlive()) {
          throw new InfrastructureStartupException(
              "rabbitmq-server exited with "
                  + p.exitValue()
                  + "; see "
                  + n.dir().resolve("out.log")
                  + " and "
                  + n.dir().resolve("log"));
        }
        if (System.nanoTime() > deadline) {
          killTree(p);
          throw new InfrastructureStartupException(
              "rabbitmq-server did not open its AMQP port in "
                  + STARTUP_TIMEOUT.toSeconds()
                  + " s; see "
                  + n.dir().resolve("log"));
        }
        Thread.sleep(100);
      }
      writeBeamPid(p, n);
      if (booted) {
        electQuorumQueueLeaders(n, begin + STARTUP_TIMEOUT.toNanos());
      }
      booted = true;
      LOG.info(
          "Started RabbitMQ node {} on 127.0.0.1:{} in {} ms (pid {})",
          n.name(),
          n.amqpPort(),
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin),
          p.pid());
    } catch (IOException e) {
      throw new InfrastructureStartupException("cannot start " + n.script(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InfrastructureStartupException("interrupted while starting RabbitMQ", e);
    }
  }

  /**
   * Stops a private node cleanly ({@code SIGTERM}, which its script turns into a graceful stop),
   * keeping its data; {@code kill -9} if it is still running after 30 seconds.
   */
  public synchronized void stop() {
    privateNode("stop");
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    p.destroy();
    try {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        killTree(p);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      killTree(p);
    }
    awaitPortClosed();
    LOG.info("RabbitMQ node {} stopped", node.orElseThrow().name());
  }

  /** Kills a private node with {@code kill -9} (its script and Erlang VM), keeping its data. */
  public synchronized void kill() {
    privateNode("kill");
    Process p = process;
    if (p == null) {
      return;
    }
    killTree(p);
    awaitPortClosed();
    LOG.info("RabbitMQ node {} killed (kill -9)", node.orElseThrow().name());
  }

  /** {@link #stop()} if it is running, then {@link #start()}: same ports, same data. */
  public synchronized void restart() {
    stop();
    start();
  }

  /** Whether a private node's process is alive; always true for an external broker. */
  public synchronized boolean isRunning() {
    return node.isEmpty() || (process != null && process.isAlive());
  }

  /**
   * Kills a private node and deletes its directory (does nothing for an external broker).
   * Idempotent; the node cannot be started again.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (node.isEmpty() || closed) {
        return;
      }
      closed = true;
      if (process != null) {
        killTree(process);
      }
    }
    Shutdown.cancel(onExit);
    OwnedDirectories.delete(node.get().dir());
  }

  /**
   * The RabbitMQ start script this machine has: named by {@value #BINARY_ENV}, else {@value
   * #DEBIAN_SCRIPT}, else the first {@code rabbitmq-server} on the {@code PATH}.
   */
  public static Optional<Path> findScript() {
    return findScript(System.getenv());
  }

  private static Optional<Path> findScript(Map<String, String> env) {
    Optional<String> named = value(env, BINARY_ENV);
    if (named.isPresent()) {
      return Optional.of(Path.of(named.get())).filter(Files::isExecutable);
    }
    if (Files.isExecutable(Path.of(DEBIAN_SCRIPT))) {
      return Optional.of(Path.of(DEBIAN_SCRIPT));
    }
    for (String dir : value(env, "PATH").orElse("/usr/sbin:/usr/bin:/usr/local/sbin").split(":")) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, "rabbitmq-server");
      if (Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  private Node privateNode(String what) {
    return node.orElseThrow(
        () -> new UnsupportedOperationException("cannot " + what + " an external broker"));
  }

  /**
   * After a restart, makes sure every quorum queue of the node has a leader, triggering an election
   * where there is none, until none is missing (or the deadline passes).
   *
   * <p>Why: RabbitMQ 3.10 (Ra 2.2) restarts some single-member quorum queues after an unclean stop
   * ({@code kill -9}) as followers that never call an election: the queue then answers {@code
   * basic.consume} with {@code 541 INTERNAL_ERROR} ("timed out consuming from quorum queue") and
   * confirms no publish, forever (seen on 2 of 9 queues here; {@code ra:trigger_election} makes
   * such a queue leader at once). A node of a real cluster has other members to elect; a single
   * node needs an operator to do what this does (see docs/guides/rabbitmq.md).
   */
  private void electQuorumQueueLeaders(Node n, long deadline)
      throws IOException, InterruptedException {
    while (true) {
      String out = RabbitCtl.eval(n.script(), n.name(), n.dir(), RabbitCtl.ELECT_LEADERS);
      if (out.equals("0")) {
        return;
      }
      LOG.warn(
          "RabbitMQ node {}: quorum queues without a leader after the restart: {} (election"
              + " triggered)",
          n.name(),
          out);
      if (System.nanoTime() > deadline) {
        throw new InfrastructureStartupException(
            "RabbitMQ node " + n.name() + ": quorum queues still without a leader: " + out);
      }
      Thread.sleep(500);
    }
  }

  /**
   * Closes, from the broker's side ({@code connection.close} 320 {@code CONNECTION_FORCED}, as an
   * operator's {@code rabbitmqctl close_connection} does), every connection of a private node whose
   * client-provided name starts with {@code namePrefix}; returns how many. Takes a few seconds (it
   * runs {@code rabbitmqctl}).
   *
   * @throws UnsupportedOperationException for an external broker
   */
  public int closeConnections(String namePrefix) {
    Node n = privateNode("close connections of");
    try {
      String out =
          RabbitCtl.eval(n.script(), n.name(), n.dir(), RabbitCtl.closeConnections(namePrefix));
      try {
        return Integer.parseInt(out);
      } catch (NumberFormatException e) {
        throw new IllegalStateException("rabbitmqctl eval answered: " + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private void writeConfiguration() {
    writeConfiguration(List.of());
  }

  private void writeConfiguration(List<String> more) {
    Node n = node.orElseThrow();
    try {
      Files.createDirectories(n.dir().resolve("mnesia"));
      Files.createDirectories(n.dir().resolve("log"));
      Files.writeString(
          n.dir().resolve("enabled_plugins"), "[rabbitmq_consistent_hash_exchange].\n");
      List<String> conf = new ArrayList<>();
      if (n.alsoListenOn().isEmpty()) {
        conf.add("listeners.tcp.default = 127.0.0.1:" + n.amqpPort());
      } else {
        conf.add("listeners.tcp.1 = 127.0.0.1:" + n.amqpPort());
        for (int i = 0; i < n.alsoListenOn().size(); i++) {
          conf.add(
              "listeners.tcp." + (i + 2) + " = " + n.alsoListenOn().get(i) + ":" + n.amqpPort());
        }
        conf.add("loopback_users = none");
      }
      conf.addAll(more);
      conf.addAll(
          List.of(
              "log.file.level = warning",
              "log.console = false",
              "disk_free_limit.absolute = 10MB",
              ""));
      Files.writeString(n.dir().resolve("rabbitmq.conf"), String.join("\n", conf));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the configuration of " + n.dir(), e);
    }
  }

  /**
   * Records the Erlang VM's pid (the script's child), so that a sweeping test kit JVM can stop a
   * node whose JVM was killed.
   */
  private static void writeBeamPid(Process p, Node n) {
    Optional<ProcessHandle> beam =
        p.descendants()
            .filter(h -> h.info().command().map(c -> c.endsWith("beam.smp")).orElse(false))
            .findFirst();
    try {
      Files.writeString(
          n.dir().resolve(PID_FILE), beam.map(h -> Long.toString(h.pid())).orElse("") + "\n");
    } catch (IOException e) {
      LOG.debug("cannot write {}", n.dir().resolve(PID_FILE), e);
    }
  }

  /** Kills the script and its descendants (the Erlang VM) and waits until each has exited. */
  private static void killTree(Process p) {
    List<ProcessHandle> tree = p.descendants().toList();
    tree.forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
    try {
      p.waitFor(20, TimeUnit.SECONDS);
      for (ProcessHandle h : tree) {
        h.onExit().get(20, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      LOG.warn("a process of the RabbitMQ node did not exit in 20 s after kill -9", e);
    }
  }

  private void awaitPortClosed() {
    int port = node.orElseThrow().amqpPort();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (portOpen(port) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static boolean portOpen(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Whether the port answers the AMQP 0-9-1 protocol header with a method frame. */
  static boolean answersAmqp(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      s.setSoTimeout(2_000);
      OutputStream out = s.getOutputStream();
      out.write("AMQP".getBytes(StandardCharsets.US_ASCII));
      out.write(new byte[] {0, 0, 9, 1});
      out.flush();
      InputStream in = s.getInputStream();
      return in.read() == 1; // frame type 1: METHOD (connection.start)
    } catch (IOException e) {
      return false;
    }
  }

  private static Optional<String> value(Map<String, String> env, String name) {
    return Optional.ofNullable(env.get(name)).map(String::trim).filter(s -> !s.isEmpty());
  }
}
