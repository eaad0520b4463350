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
 * One RabbitMQ node of a test kit cluster, a child process of this JVM started from the machine's
 * {@code rabbitmq-server} script: its own node name, AMQP port (given in its configuration file
 * only: {@code RABBITMQ_NODE_PORT} would add a second listener on the same port when {@code
 * rabbitmqctl start_app} boots the application again, which then fails with {@code eaddrinuse}),
 * Erlang distribution port and directory (data, logs, plugins and configuration files, and {@code
 * HOME} with the cluster's Erlang cookie). Its Erlang VM's pid is written to {@value #PID_FILE}, so
 * a test kit JVM sweeping the folder of a killed JVM stops it. Thread-safe.
 */
public final class RabbitNodeProcess {

  /** The file in the node's directory holding its Erlang VM's pid (as RabbitMqServer's). */
  public static final String PID_FILE = "rabbitmq-beam.pid";

  private static final Logger LOG = LoggerFactory.getLogger(RabbitNodeProcess.class);

  private final Path script;
  private final String name;
  private final int amqpPort;
  private final int distPort;
  private final Path dir;
  private final String erlangArgs;
  private Process process;

  private RabbitNodeProcess(
      Path script, String name, int amqpPort, int distPort, Path dir, String erlangArgs) {
    this.script = script;
    this.name = name;
    this.amqpPort = amqpPort;
    this.distPort = distPort;
    this.dir = dir;
    this.erlangArgs = erlangArgs;
  }

  /**
   * A node (not started) in {@code dir}: writes its plugins file (the consistent-hash exchange),
   * configuration file ({@code conf} after the listener on 127.0.0.1) and Erlang {@code cookie}.
   */
  public static RabbitNodeProcess create(
      Path script,
      String name,
      int amqpPort,
      int distPort,
      Path dir,
      String cookie,
      String erlangArgs,
      List<String> conf) {
    try {
      Files.createDirectories(dir.resolve("mnesia"));
      Files.createDirectories(dir.resolve("log"));
      Files.writeString(dir.resolve("enabled_plugins"), "[rabbitmq_consistent_hash_exchange].\n");
      List<String> lines = new ArrayList<>();
      lines.add("listeners.tcp.default = 127.0.0.1:" + amqpPort);
      lines.addAll(conf);
      lines.addAll(
          List.of(
              "log.file.level = warning",
              "log.console = false",
              "disk_free_limit.absolute = 10MB",
              ""));
      Files.writeString(dir.resolve("rabbitmq.conf"), String.join("\n", lines));
      Path cookieFile = dir.resolve(".erlang.cookie");
      Files.writeString(cookieFile, cookie);
      Files.setPosixFilePermissions(cookieFile, PosixFilePermissions.fromString("r--------"));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the configuration of " + dir, e);
    }
    return new RabbitNodeProcess(script, name, amqpPort, distPort, dir, erlangArgs);
  }

  /** The node name, {@code <name>@localhost}. */
  public String name() {
    return name;
  }

  /** The AMQP port on 127.0.0.1. */
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
      ProcessBuilder pb =
          new ProcessBuilder(List.of(script.toString()))
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("out.log").toFile()));
      Map<String, String> env = pb.environment();
      env.put("HOME", dir.toString());
      env.put("RABBITMQ_NODENAME", name);
      env.remove("RABBITMQ_NODE_IP_ADDRESS");
      env.remove("RABBITMQ_NODE_PORT");
      env.put("RABBITMQ_DIST_PORT", Integer.toString(distPort));
      env.put("RABBITMQ_MNESIA_BASE", dir.resolve("mnesia").toString());
      env.put("RABBITMQ_LOG_BASE", dir.resolve("log").toString());
      env.put("RABBITMQ_ENABLED_PLUGINS_FILE", dir.resolve("enabled_plugins").toString());
      env.put("RABBITMQ_CONFIG_FILE", dir.resolve("rabbitmq").toString());
      env.put("RABBITMQ_PID_FILE", dir.resolve("rabbitmq.pid").toString());
      env.put("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", erlangArgs);
      env.remove("RABBITMQ_CONF_ENV_FILE");
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
      while (!answersAmqp(amqpPort)) {
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

  /** A clean stop ({@code SIGTERM}); {@code kill -9} if it is still running after 30 s. */
  public synchronized void stop() {
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
  }

  /**
   * Runs {@code rabbitmqctl -n <this node> args...}.
   *
   * @throws IllegalStateException if it could not be run or exited with an error
   */
  public String ctl(String... args) {
    try {
      RabbitCtl.Result r = RabbitCtl.run(script, name, dir, args);
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

  private void writeBeamPid(Process p) {
    Optional<ProcessHandle> beam =
        p.descendants()
            .filter(h -> h.info().command().map(c -> c.endsWith("beam.smp")).orElse(false))
            .findFirst();
    try {
      Files.writeString(
          dir.resolve(PID_FILE), beam.map(h -> Long.toString(h.pid())).orElse("") + "\n");
    } catch (IOException e) {
      LOG.debug("cannot write {}", dir.resolve(PID_FILE), e);
    }
  }

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
    while (portOpen(amqpPort) && System.nanoTime() < deadline) {
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
  public static boolean answersAmqp(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      s.setSoTimeout(2_000);
      OutputStream out = s.getOutputStream();
      out.write("AMQP".getBytes(StandardCharsets.US_ASCII));
      out.write(new byte[] {0, 0, 9, 1});
      out.flush();
      InputStream in = s.getInputStream();
      return in.read() == 1;
    } catch (IOException e) {
      return false;
    }
  }

  /** How long ago {@code begin} ({@link System#nanoTime()}) was, in milliseconds. */
  static long millisSince(long begin) {
    return Duration.ofNanos(System.nanoTime() - begin).toMillis();
  }
}
