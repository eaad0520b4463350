package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One private RabbitMQ node, a child process of this JVM started from the machine's {@code
 * rabbitmq-server} script: a node of a test kit cluster or {@code RabbitMqServer}'s private node.
 * It has its own node name ({@code postbox-<amqp port>@localhost}, or in its own network namespace
 * {@code postbox-<amqp port>@<namespace>}, see {@link OwnNetwork}), AMQP port, Erlang distribution
 * port and directory (data, logs, plugins and configuration files, and {@code HOME} with its Erlang
 * cookie). Its Erlang VM's pid is written to {@value #PID_FILE}, so a test kit JVM sweeping the
 * folder of a killed JVM stops it. Thread-safe.
 */
public final class RabbitNodeProcess {

  /** The file in the node's directory holding its Erlang VM's pid. */
  public static final String PID_FILE = "rabbitmq-beam.pid";

  private static final Logger LOG = LoggerFactory.getLogger(RabbitNodeProcess.class);

  private final Path script;
  private final String name;
  private final int amqpPort;
  private final int distPort;
  private final Path dir;
  private final Optional<String> erlangArgs;
  private final boolean portInEnvironment;
  private final Optional<OwnNetwork> network;
  private Process process;

  private RabbitNodeProcess(Setup setup) {
    this.script = setup.script;
    this.network = setup.network;
    this.name = nodeName(setup.amqpPort, network.map(OwnNetwork::hostName).orElse(LOCALHOST));
    this.amqpPort = setup.amqpPort;
    this.distPort = setup.distPort;
    this.dir = setup.dir;
    this.erlangArgs = setup.erlangArgs;
    this.portInEnvironment = setup.portInEnvironment;
  }

  private static final String LOCALHOST = "localhost";

  /** The file with the node's own {@code rabbitmq-env.conf}, with {@link OwnNetwork}. */
  private static final String ENV_FILE = "rabbitmq-env.conf";

  /** The node's Erlang {@code inetrc} file (its peers' host names), with {@link OwnNetwork}. */
  private static final String INETRC_FILE = "inetrc";

  /**
   * A node in its own network namespace: launched with {@code launcher} ({@code ip netns exec
   * <namespace>}), named {@code postbox-<port>@hostName}, listening for AMQP on {@code address}
   * (where clients outside the namespace reach it), resolving its peers' host names with the {@code
   * hosts} (host name to IPv4 address) written to an Erlang {@code inetrc} file, and with {@code
   * ctlErlangArgs} for {@code rabbitmqctl}'s Erlang VM, which runs in the namespace too (the same
   * {@code net_ticktime} as the node's).
   */
  public record OwnNetwork(
      List<String> launcher,
      String hostName,
      String address,
      Map<String, String> hosts,
      String ctlErlangArgs) {
    public OwnNetwork {
      launcher = List.copyOf(launcher);
      hosts = Map.copyOf(hosts);
    }

    /**
     * The {@code inetrc} file: every host, then lookup in that table first, the system's resolver
     * after. Hand-written: the file is Erlang terms, and nothing on the class path writes them.
     */
    String inetrc() {
      StringBuilder b = new StringBuilder();
      new java.util.TreeMap<>(hosts)
          .forEach((host, ip) ->
              b.append("{host, {")
                  .append(ip.replace('.', ','))
                  .append("}, [\"")
                  .append(host)
                  .append("\"]}.\n"));
      return b.append("{lookup, [file, native]}.\n").toString();
    }
  }

  /**
   * The set-up of a node from {@code script} in {@code dir} with AMQP port {@code amqpPort} on
   * 127.0.0.1 and Erlang distribution port {@code distPort}; {@link Setup#create()} writes its
   * files.
   */
  public static Setup in(Path dir, Path script, int amqpPort, int distPort) {
    return new Setup(dir, script, amqpPort, distPort);
  }

  /** What a node has beyond its script, ports and directory. Not thread-safe. */
  public static final class Setup {
    private final Path dir;
    private final Path script;
    private final int amqpPort;
    private final int distPort;
    private List<String> alsoListenOn = List.of();
    private List<String> conf = List.of();
    private Optional<String> cookie = Optional.empty();
    private Optional<String> erlangArgs = Optional.empty();
    private boolean portInEnvironment;
    private Optional<OwnNetwork> network = Optional.empty();

    private Setup(Path dir, Path script, int amqpPort, int distPort) {
      this.dir = dir;
      this.script = script;
      this.amqpPort = amqpPort;
      this.distPort = distPort;
    }

    /**
     * Listens on the AMQP port on each of {@code addresses} (IPv4) as well as on 127.0.0.1, and
     * lets the guest user log in from anywhere; default none.
     */
    public Setup alsoListenOn(List<String> addresses) {
      this.alsoListenOn = List.copyOf(addresses);
      return this;
    }

    /** Configuration file lines after the listeners; default none. */
    public Setup conf(List<String> lines) {
      this.conf = List.copyOf(lines);
      return this;
    }

    /** The Erlang cookie, written to {@code HOME}; default: the one Erlang makes at the start. */
    public Setup cookie(String cookie) {
      this.cookie = Optional.of(cookie);
      return this;
    }

    /** {@code RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS}; default: what this JVM's environment has. */
    public Setup erlangArgs(String args) {
      this.erlangArgs = Optional.of(args);
      return this;
    }

    /**
     * Runs the node in its own network namespace ({@link OwnNetwork}); default: this machine's
     * network, named {@code postbox-<port>@localhost}, AMQP on 127.0.0.1. The node then also gets
     * its own {@code rabbitmq-env.conf} in place of the machine's (Debian's binds Erlang
     * distribution and epmd to 127.0.0.1, which its peers in other namespaces cannot reach) and
     * lets the guest user log in from its clients' address.
     */
    public Setup ownNetwork(OwnNetwork network) {
      this.network = Optional.of(network);
      return this;
    }

    /**
     * Whether the AMQP listener is also given in the environment ({@code RABBITMQ_NODE_IP_ADDRESS},
     * {@code RABBITMQ_NODE_PORT}); default false, the configuration file only. Only for a node with
     * no other listeners (these would replace them with one) whose application is never booted
     * again by {@code rabbitmqctl start_app} (which would add a second listener on the same port
     * and fail with {@code eaddrinuse}).
     */
    public Setup portInEnvironment(boolean inEnvironment) {
      this.portInEnvironment = inEnvironment;
      return this;
    }

    /**
     * The node (not started), after writing its plugins file (the consistent-hash exchange),
     * configuration file and Erlang cookie (if given) to its directory.
     */
    public RabbitNodeProcess create() {
      try {
        Files.createDirectories(dir.resolve("mnesia"));
        Files.createDirectories(dir.resolve("log"));
        Files.writeString(dir.resolve("enabled_plugins"), "[rabbitmq_consistent_hash_exchange].\n");
        Files.writeString(dir.resolve("rabbitmq.conf"), String.join("\n", configuration()));
        if (network.isPresent()) {
          Files.writeString(
              dir.resolve(ENV_FILE),
              "# the test kit's: not /etc/rabbitmq/rabbitmq-env.conf (distribution on 127.0.0.1)\n");
          Files.writeString(dir.resolve(INETRC_FILE), network.get().inetrc());
        }
        if (cookie.isPresent()) {
          Path cookieFile = dir.resolve(".erlang.cookie");
          Files.writeString(cookieFile, cookie.get());
          Files.setPosixFilePermissions(cookieFile, PosixFilePermissions.fromString("r--------"));
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write the configuration of " + dir, e);
      }
      return new RabbitNodeProcess(this);
    }

    private List<String> configuration() {
      List<String> lines = new ArrayList<>();
      if (network.isPresent()) {
        lines.add("listeners.tcp.default = " + network.get().address() + ":" + amqpPort);
        lines.add("loopback_users = none");
      } else if (alsoListenOn.isEmpty()) {
        lines.add("listeners.tcp.default = 127.0.0.1:" + amqpPort);
      } else {
        lines.add("listeners.tcp.1 = 127.0.0.1:" + amqpPort);
        for (int i = 0; i < alsoListenOn.size(); i++) {
          lines.add("listeners.tcp." + (i + 2) + " = " + alsoListenOn.get(i) + ":" + amqpPort);
        }
        lines.add("loopback_users = none");
      }
      lines.addAll(conf);
      lines.addAll(
          List.of(
              "log.file.level = warning",
              "log.console = false",
              "disk_free_limit.absolute = 10MB",
              ""));
      return lines;
    }
  }

  /**
   * The node name of the node with AMQP port {@code amqpPort}: {@code postbox-<port>@localhost}.
   */
  public static String nodeName(int amqpPort) {
    return nodeName(amqpPort, LOCALHOST);
  }

  /** The node name of the node with AMQP port {@code amqpPort} on {@code host}. */
  public static String nodeName(int amqpPort, String host) {
    return "postbox-" + amqpPort + "@" + host;
  }

  /** The node name, {@code postbox-<port>@<host>}. */
  public String name() {
    return name;
  }

  /** The address the node's AMQP listener has for clients: 127.0.0.1 or its own network's. */
  public String host() {
    return network.map(OwnNetwork::address).orElse("127.0.0.1");
  }

  /** The AMQP port, on {@link #host()}. */
  public int amqpPort() {
    return amqpPort;
  }

  /** The node's directory ({@code HOME} of its CLI calls). */
  public Path dir() {
    return dir;
  }

  /** Launches the node (if it is not running) without waiting for it. */
  public synchronized void launch() {
    if (process != null && process.isAlive()) {
      return;
    }
    try {
      List<String> command = new ArrayList<>(network.map(OwnNetwork::launcher).orElse(List.of()));
      command.add(script.toString());
      ProcessBuilder pb =
          new ProcessBuilder(command)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("out.log").toFile()));
      Map<String, String> env = pb.environment();
      env.put("HOME", dir.toString());
      env.put("RABBITMQ_NODENAME", name);
      if (portInEnvironment) {
        env.put("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1");
        env.put("RABBITMQ_NODE_PORT", Integer.toString(amqpPort));
      } else {
        env.remove("RABBITMQ_NODE_IP_ADDRESS");
        env.remove("RABBITMQ_NODE_PORT");
      }
      env.put("RABBITMQ_DIST_PORT", Integer.toString(distPort));
      env.put("RABBITMQ_MNESIA_BASE", dir.resolve("mnesia").toString());
      env.put("RABBITMQ_LOG_BASE", dir.resolve("log").toString());
      env.put("RABBITMQ_ENABLED_PLUGINS_FILE", dir.resolve("enabled_plugins").toString());
      env.put("RABBITMQ_CONFIG_FILE", dir.resolve("rabbitmq").toString());
      env.put("RABBITMQ_PID_FILE", dir.resolve("rabbitmq.pid").toString());
      erlangArgs.ifPresent(a -> env.put("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", a));
      env.remove("RABBITMQ_CONF_ENV_FILE");
      env.putAll(networkEnvironment());
      process = pb.start();
      Shutdown.killOnExit(process);
    } catch (IOException e) {
      throw new InfrastructureStartupException("cannot start " + script, e);
    }
  }

  /**
   * Waits until the node answers the AMQP handshake, then records its Erlang VM's pid.
   *
   * @throws InfrastructureStartupException if it exited or did not answer before {@code deadline}
   *     ({@link System#nanoTime()})
   */
  public void awaitAmqp(long deadline) {
    Process p;
    synchronized (this) {
      p = process;
    }
    if (p == null) {
      throw new IllegalStateException(name + " was not launched");
    }
    try {
      while (!answersAmqp(host(), amqpPort)) {
        if (!p.isAlive()) {
          throw new InfrastructureStartupException(
              name
                  + " exited with "
                  + p.exitValue()
                  + "; see "
                  + dir.resolve("out.log")
                  + " and "
                  + dir.resolve("log"));
        }
        if (System.nanoTime() > deadline) {
          kill();
          throw new InfrastructureStartupException(
              name + " did not open its AMQP port in time; see " + dir.resolve("log"));
        }
        Thread.sleep(100);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InfrastructureStartupException("interrupted while starting " + name, e);
    }
    writeBeamPid(p);
  }

  /** The process id of the node's start script; -1 if it was never launched. */
  public synchronized long pid() {
    return process == null ? -1 : process.pid();
  }

  /** Whether the node's process is alive. */
  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** {@code kill -9} of the script and its Erlang VM; waits until the AMQP port is closed. */
  public synchronized void kill() {
    if (process != null) {
      killTree(process);
    }
    awaitPortClosed();
  }

  /**
   * A clean stop: {@code SIGTERM} to the Erlang VM, which stops RabbitMQ as {@code rabbitmqctl
   * stop} does (Erlang/OTP's default handler calls {@code init:stop()}); {@code kill -9} if it is
   * still running after 30 s. The signal goes to the VM itself: Debian's wrapper ({@code sh}, then
   * {@code su} to the {@code rabbitmq} user, then the real script) does not pass a {@code SIGTERM}
   * on, so signalling the launched script would leave the VM running.
   */
  public synchronized void stop() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    beam(p).ifPresentOrElse(ProcessHandle::destroy, p::destroy);
    try {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        killTree(p);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      killTree(p);
    }
    awaitPortClosed();
  }

  /**
   * Runs {@code rabbitmqctl -n <this node> args...}.
   *
   * @throws IllegalStateException if it could not be run or exited with an error
   */
  public String ctl(String... args) {
    try {
      RabbitCtl.Result r = RabbitCtl.run(launcher(), ctlEnvironment(), script, name, dir, args);
      if (!r.ok()) {
        throw new IllegalStateException(
            "rabbitmqctl -n " + name + " " + String.join(" ", args) + " failed: " + r.output());
      }
      return r.output();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /**
   * Runs {@code rabbitmqctl -n <this node> -q eval expr}; its trimmed output, whether it succeeded
   * or not.
   */
  public String eval(String expr) throws IOException, InterruptedException {
    return RabbitCtl.run(launcher(), ctlEnvironment(), script, name, dir, "-q", "eval", expr)
        .output();
  }

  /** What runs a command in the node's network namespace; empty on this machine's network. */
  private List<String> launcher() {
    return network.map(OwnNetwork::launcher).orElse(List.of());
  }

  /**
   * The environment of the node's Erlang VM in its own network: its own {@code rabbitmq-env.conf}
   * and {@code inetrc}; nothing on this machine's network.
   */
  private Map<String, String> networkEnvironment() {
    if (network.isEmpty()) {
      return Map.of();
    }
    return Map.of(
        "RABBITMQ_CONF_ENV_FILE", dir.resolve(ENV_FILE).toString(),
        "ERL_INETRC", dir.resolve(INETRC_FILE).toString());
  }

  /** As {@link #networkEnvironment()}, for {@code rabbitmqctl}, with its Erlang arguments. */
  private Map<String, String> ctlEnvironment() {
    Map<String, String> env = new java.util.HashMap<>(networkEnvironment());
    network.ifPresent(n -> env.put("RABBITMQ_CTL_ERL_ARGS", n.ctlErlangArgs()));
    return env;
  }

  /**
   * Records the Erlang VM's pid (the script's child), so that a sweeping test kit JVM can stop a
   * node whose JVM was killed.
   */
  private void writeBeamPid(Process p) {
    Optional<ProcessHandle> beam = beam(p);
    try {
      Files.writeString(
          dir.resolve(PID_FILE), beam.map(h -> Long.toString(h.pid())).orElse("") + "\n");
    } catch (IOException e) {
      LOG.debug("cannot write {}", dir.resolve(PID_FILE), e);
    }
  }

  /** The node's Erlang VM, a descendant of the launched script; empty if there is none (yet). */
  private static Optional<ProcessHandle> beam(Process p) {
    return p.descendants()
        .filter(h -> h.info().command().map(c -> c.endsWith("beam.smp")).orElse(false))
        .findFirst();
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
    } catch (ExecutionException | TimeoutException e) {
      LOG.warn("a process of the RabbitMQ node did not exit in 20 s after kill -9", e);
    }
  }

  private void awaitPortClosed() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (portOpen(host(), amqpPort) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static boolean portOpen(String host, int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Whether port {@code port} on 127.0.0.1 answers the AMQP 0-9-1 protocol header. */
  public static boolean answersAmqp(int port) {
    return answersAmqp("127.0.0.1", port);
  }

  /**
   * Whether {@code host}:{@code port} answers the AMQP 0-9-1 protocol header with a method frame.
   */
  public static boolean answersAmqp(String host, int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), 200);
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

  /** How long ago {@code begin} ({@link System#nanoTime()}) was, in milliseconds. */
  public static long millisSince(long begin) {
    return Duration.ofNanos(System.nanoTime() - begin).toMillis();
  }
}
