package dev.postbox.testkit;

import dev.postbox.testkit.internal.FreePorts;
import dev.postbox.testkit.internal.OwnedDirectories;
import dev.postbox.testkit.internal.RabbitCtl;
import dev.postbox.testkit.internal.RabbitNodeProcess;
import dev.postbox.testkit.internal.Shutdown;
import dev.postbox.testkit.internal.TlsMaterial;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
  public static final String PID_FILE = RabbitNodeProcess.PID_FILE;

  /** How long {@link #start()} waits for the AMQP port of a private node. */
  public static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(120);

  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqServer.class);
  private static final Object LOCK = new Object();
  private static RabbitMqServer shared;
  private static String unavailable;

  private final String uri;
  private final Optional<RabbitNodeProcess> node;
  private final Optional<RabbitTlsListener> tls;
  private boolean booted;
  private final Runnable onExit = this::close;
  private boolean closed;

  private RabbitMqServer(
      String uri, Optional<RabbitNodeProcess> node, Optional<RabbitTlsListener> tls) {
    this.uri = uri;
    this.node = node;
    this.tls = tls;
  }

  /** A server for private node {@code node}, killed at JVM exit. */
  private static RabbitMqServer ofPrivate(RabbitNodeProcess node, Optional<RabbitTlsListener> tls) {
    RabbitMqServer server =
        new RabbitMqServer(
            "amqp://guest:guest@127.0.0.1:" + node.amqpPort() + "/%2F", Optional.of(node), tls);
    Shutdown.runOnExit(server.onExit);
    return server;
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
    return new RabbitMqServer(uri, Optional.empty(), Optional.empty());
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
        ofPrivate(
            RabbitNodeProcess.in(dir, script, ports[0], ports[1])
                .alsoListenOn(alsoListenOn)
                .portInEnvironment(alsoListenOn.isEmpty())
                .create(),
            Optional.empty());
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
    TlsMaterial material = TlsMaterial.inDirectory(dir.resolve("tls"), "127.0.0.1");
    RabbitTlsListener tls =
        new RabbitTlsListener("127.0.0.1", ports[2], material.trustStore(), material.password());
    List<Path> pem = material.pemFiles();
    RabbitMqServer server =
        ofPrivate(
            RabbitNodeProcess.in(dir, script, ports[0], ports[1])
                .portInEnvironment(true)
                .conf(
                    List.of(
                        "listeners.ssl.default = 127.0.0.1:" + tls.port(),
                        "ssl_options.cacertfile = " + pem.get(0),
                        "ssl_options.certfile = " + pem.get(0),
                        "ssl_options.keyfile = " + pem.get(1),
                        "ssl_options.verify = verify_none",
                        "ssl_options.fail_if_no_peer_cert = false"))
                .create(),
            Optional.of(tls));
    server.start();
    return server;
  }

  /** The TLS listener of a node started with {@link #startPrivateWithTls}; empty otherwise. */
  public Optional<RabbitTlsListener> tlsListener() {
    return tls;
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
    return node.map(RabbitNodeProcess::dir);
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
    RabbitNodeProcess n = privateNode("start");
    if (closed) {
      throw new IllegalStateException("closed");
    }
    if (n.isRunning()) {
      return;
    }
    long begin = System.nanoTime();
    long deadline = begin + STARTUP_TIMEOUT.toNanos();
    n.launch();
    n.awaitAmqp(deadline);
    if (booted) {
      electQuorumQueueLeaders(n, deadline);
    }
    booted = true;
    LOG.info(
        "Started RabbitMQ node {} on 127.0.0.1:{} in {} ms (pid {})",
        n.name(),
        n.amqpPort(),
        RabbitNodeProcess.millisSince(begin),
        n.pid());
  }

  /**
   * Stops a private node cleanly ({@code SIGTERM}, which its script turns into a graceful stop),
   * keeping its data; {@code kill -9} if it is still running after 30 seconds.
   */
  public synchronized void stop() {
    RabbitNodeProcess n = privateNode("stop");
    if (!n.isRunning()) {
      return;
    }
    n.stop();
    LOG.info("RabbitMQ node {} stopped", n.name());
  }

  /** Kills a private node with {@code kill -9} (its script and Erlang VM), keeping its data. */
  public synchronized void kill() {
    RabbitNodeProcess n = privateNode("kill");
    n.kill();
    LOG.info("RabbitMQ node {} killed (kill -9)", n.name());
  }

  /** {@link #stop()} if it is running, then {@link #start()}: same ports, same data. */
  public synchronized void restart() {
    stop();
    start();
  }

  /** Whether a private node's process is alive; always true for an external broker. */
  public synchronized boolean isRunning() {
    return node.map(RabbitNodeProcess::isRunning).orElse(true);
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
      node.get().kill();
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

  private RabbitNodeProcess privateNode(String what) {
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
  private static void electQuorumQueueLeaders(RabbitNodeProcess n, long deadline) {
    try {
      while (true) {
        String out = n.eval(RabbitCtl.ELECT_LEADERS);
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
    } catch (IOException e) {
      throw new InfrastructureStartupException("cannot run rabbitmqctl for " + n.name(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InfrastructureStartupException("interrupted while starting RabbitMQ", e);
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
    RabbitNodeProcess n = privateNode("close connections of");
    String out = n.ctl("-q", "eval", RabbitCtl.closeConnections(namePrefix));
    try {
      return Integer.parseInt(out);
    } catch (NumberFormatException e) {
      throw new IllegalStateException("rabbitmqctl eval answered: " + out);
    }
  }

  private static Optional<String> value(Map<String, String> env, String name) {
    return Optional.ofNullable(env.get(name)).map(String::trim).filter(s -> !s.isEmpty());
  }
}
