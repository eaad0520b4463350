package dev.postbox.testkit;

import dev.postbox.testkit.internal.FreePorts;
import dev.postbox.testkit.internal.Shutdown;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Redis server for tests: a private {@code redis-server} child process (no persistence, bound to
 * {@code 127.0.0.1} on a free port, killed at JVM exit), or an external server given by {@value
 * #URL_ENV} ({@code redis://host:port}).
 *
 * <p>{@link #sharedOrSkip()} is what tests call: the JVM's shared server, started on first use.
 * Where there is neither a {@code redis-server} binary (on the {@code PATH}, or named by {@value
 * #BINARY_ENV}) nor {@value #URL_ENV}, the test is skipped (a JUnit assumption) with one line that
 * says why; in CI (the {@code CI} environment variable set) it fails instead, so a CI machine
 * without Redis cannot pass by skipping.
 *
 * <p>Thread-safe.
 */
public final class RedisServer implements AutoCloseable {

  /** Environment variable naming an external server, for example {@code redis://host:6379}. */
  public static final String URL_ENV = "POSTBOX_REDIS_URL";

  /** Environment variable naming the {@code redis-server} binary (default: found on the PATH). */
  public static final String BINARY_ENV = "POSTBOX_REDIS_SERVER";

  private static final Logger LOG = LoggerFactory.getLogger(RedisServer.class);
  private static final Object LOCK = new Object();
  private static RedisServer shared;
  private static String unavailable;

  private final String uri;
  private final Optional<Process> process;

  private RedisServer(String uri, Optional<Process> process) {
    this.uri = uri;
    this.process = process;
  }

  /**
   * The JVM's shared Redis server (external if {@value #URL_ENV} is set, else a private child
   * process started now), or the test is skipped when none is available outside CI.
   *
   * @throws InfrastructureStartupException in CI when no server is available, or if one could not
   *     be started
   */
  public static RedisServer sharedOrSkip() {
    synchronized (LOCK) {
      if (shared != null) {
        return shared;
      }
      Map<String, String> env = System.getenv();
      if (unavailable == null) {
        Optional<String> url = value(env, URL_ENV);
        if (url.isPresent()) {
          shared = new RedisServer(url.get(), Optional.empty());
          return shared;
        }
        Optional<Path> binary = findBinary(env);
        if (binary.isPresent()) {
          shared = startPrivate(binary.get());
          Shutdown.runOnExit(shared::close);
          return shared;
        }
        unavailable =
            "Redis tests skipped: no redis-server on the PATH (or "
                + BINARY_ENV
                + ") and "
                + URL_ENV
                + " is not set";
        if (value(env, "CI").isEmpty()) {
          LOG.warn(unavailable);
        }
      }
      if (value(env, "CI").isPresent()) {
        throw new InfrastructureStartupException(
            "CI is set and Redis is missing: install redis-server or set " + URL_ENV);
      }
      Assumptions.abort(unavailable);
      throw new AssertionError("unreachable");
    }
  }

  /**
   * Starts a private {@code redis-server} from {@code binary} on a free port and waits until it
   * answers {@code PING}. {@link #close()} kills it.
   */
  public static RedisServer startPrivate(Path binary) {
    int port = FreePorts.pick(1)[0];
    try {
      Path dir = Files.createTempDirectory("postbox-redis-");
      Shutdown.deleteOnExit(dir);
      Process p =
          new ProcessBuilder(
                  List.of(
                      binary.toString(),
                      "--port",
                      Integer.toString(port),
                      "--bind",
                      "127.0.0.1",
                      "--save",
                      "",
                      "--appendonly",
                      "no",
                      "--dir",
                      dir.toString(),
                      "--logfile",
                      dir.resolve("redis.log").toString()))
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("redis.out").toFile())
              .start();
      Shutdown.killOnExit(p);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (!ping(port)) {
        if (!p.isAlive()) {
          throw new InfrastructureStartupException(
              "redis-server exited with " + p.exitValue() + "; see " + dir.resolve("redis.log"));
        }
        if (System.nanoTime() > deadline) {
          p.destroyForcibly();
          throw new InfrastructureStartupException("redis-server did not answer PING in 20 s");
        }
        Thread.sleep(20);
      }
      LOG.info("Started redis-server on 127.0.0.1:{} (pid {})", port, p.pid());
      return new RedisServer("redis://127.0.0.1:" + port, Optional.of(p));
    } catch (IOException e) {
      throw new InfrastructureStartupException("cannot start " + binary, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InfrastructureStartupException("interrupted while starting " + binary, e);
    }
  }

  /** The server's URI, {@code redis://host:port}. */
  public String uri() {
    return uri;
  }

  /** Whether this is an external server (no lifecycle control). */
  public boolean isExternal() {
    return process.isEmpty();
  }

  /** Kills a private server (does nothing for an external one). */
  @Override
  public void close() {
    process.ifPresent(p -> {
      p.destroyForcibly();
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
  }

  /**
   * The {@code redis-server} binary this machine has: named by {@value #BINARY_ENV}, else the first
   * on the {@code PATH}.
   */
  public static Optional<Path> findBinary() {
    return findBinary(System.getenv());
  }

  private static Optional<Path> findBinary(Map<String, String> env) {
    Optional<String> named = value(env, BINARY_ENV);
    if (named.isPresent()) {
      return Optional.of(Path.of(named.get())).filter(Files::isExecutable);
    }
    for (String dir : value(env, "PATH").orElse("/usr/bin:/usr/local/bin").split(":")) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, "redis-server");
      if (Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  private static boolean ping(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      s.setSoTimeout(1_000);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[7];
      int n = in.readNBytes(buf, 0, 7);
      return n == 7 && new String(buf, StandardCharsets.US_ASCII).equals("+PONG\r\n");
    } catch (IOException e) {
      return false;
    }
  }

  private static Optional<String> value(Map<String, String> env, String name) {
    return Optional.ofNullable(env.get(name)).map(String::trim).filter(s -> !s.isEmpty());
  }
}
