package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Temporary data directories under the test kit's {@linkplain #root() root folder}, each locked by
 * the JVM that owns it. A JVM that dies without running its shutdown hooks ({@code kill -9}) leaves
 * its directories behind, and maybe a PostgreSQL server; the next JVM that creates a directory here
 * finds them by their released lock, stops such a server and deletes them. Thread-safe.
 *
 * <p>The root is per OS user ({@code ${java.io.tmpdir}/postbox-testkit-<user.name>}), so users
 * sharing a machine (and its {@code /tmp}) never share or lock each other out of a folder; {@value
 * #DIR_PROPERTY} (system property) or {@value #DIR_ENV} (environment variable) moves it.
 */
public final class OwnedDirectories {

  /** The system property that overrides {@link #root()}; wins over {@link #DIR_ENV}. */
  public static final String DIR_PROPERTY = "postbox.testkit.dir";

  /** The environment variable that overrides {@link #root()}. */
  public static final String DIR_ENV = "POSTBOX_TESTKIT_DIR";

  private static final Logger LOG = LoggerFactory.getLogger(OwnedDirectories.class);
  private static final String LOCK_FILE = ".owner.lock";

  private static final Map<Path, FileChannel> HELD = new ConcurrentHashMap<>();
  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rwx------");

  private OwnedDirectories() {}

  /**
   * The parent of all owned directories: {@value #DIR_PROPERTY} if set, else {@value #DIR_ENV} if
   * set, else {@code ${java.io.tmpdir}/postbox-testkit-<user.name>}.
   */
  public static Path root() {
    return root(System::getProperty, System::getenv);
  }

  /** {@link #root()} with the system properties and the environment given as look-ups. */
  static Path root(
      Function<String, String> systemProperties, Function<String, String> environment) {
    String override = systemProperties.apply(DIR_PROPERTY);
    if (override == null || override.isBlank()) {
      override = environment.apply(DIR_ENV);
    }
    if (override != null && !override.isBlank()) {
      return Path.of(override.strip());
    }
    return Path.of(
        systemProperties.apply("java.io.tmpdir"),
        "postbox-testkit-" + folderSafe(systemProperties.apply("user.name")));
  }

  /** {@code user} with every character but letters, digits, '.', '_' and '-' replaced by '_'. */
  static String folderSafe(String user) {
    if (user == null || user.isBlank()) {
      return "unknown";
    }
    return user.replaceAll("[^A-Za-z0-9._-]", "_");
  }

  /**
   * Cleans up after dead JVMs, then creates a new directory named {@code prefix...}, locked by this
   * JVM and deleted when it exits.
   */
  public static Path create(String prefix) {
    return create(root(), prefix);
  }

  /**
   * The given directory (created if missing, kept), or, if none is given, a new owned one as {@link
   * #create(String)} makes.
   */
  public static Path createOrUse(Optional<Path> given, String prefix) {
    if (given.isEmpty()) {
      return create(prefix);
    }
    try {
      return Files.createDirectories(given.get());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the data directory " + given.get(), e);
    }
  }

  /** {@link #create(String)} under {@code rootDir}. */
  static Path create(Path rootDir, String prefix) {
    try {
      Path root = createRoot(rootDir);
      sweep(root);
      Path dir = Files.createTempDirectory(root, prefix);
      FileChannel channel =
          FileChannel.open(
              dir.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      if (channel.tryLock() == null) {
        channel.close();
        throw new IllegalStateException("cannot lock the new directory " + dir);
      }
      channel.write(StandardCharsets.UTF_8.encode("pid " + ProcessHandle.current().pid() + "\n"));
      HELD.put(dir, channel);
      Shutdown.deleteOnExit(dir);
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(cannotCreateMessage(rootDir, e), e);
    }
  }

  /** Creates {@code root} (and its parents) if missing, readable by its owner only where POSIX. */
  private static Path createRoot(Path root) throws IOException {
    if (Files.isDirectory(root)) {
      return root;
    }
    if (root.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      return Files.createDirectories(root, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
    }
    return Files.createDirectories(root);
  }

  /** What failed, where, as whom, and how to choose another folder. */
  static String cannotCreateMessage(Path root, IOException cause) {
    return "cannot create a data directory under "
        + root
        + " as OS user '"
        + System.getProperty("user.name")
        + "' ("
        + cause
        + "); make that folder writable for this user, or choose another with -D"
        + DIR_PROPERTY
        + "=<folder> or the environment variable "
        + DIR_ENV
        + "=<folder>";
  }

  /**
   * A folder {@code name} under {@link #root()} that outlives this JVM and is shared by the user's
   * JVMs (a cache, such as unpacked PostgreSQL binaries); never swept, since it holds no lock file.
   * Creates the root if missing; the caller creates the folder itself.
   */
  public static Path cacheDirectory(String name) {
    Path root = root();
    try {
      return createRoot(root).resolve(name);
    } catch (IOException e) {
      throw new UncheckedIOException(cannotCreateMessage(root, e), e);
    }
  }

  /** Releases the lock and deletes {@code dir}. */
  public static void delete(Path dir) {
    FileChannel channel = HELD.remove(dir);
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException e) {
        LOG.debug("cannot close the lock of {}", dir, e);
      }
    }
    Shutdown.deleteRecursively(dir);
  }

  private static void sweep(Path root) {
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, Files::isDirectory)) {
      for (Path dir : dirs) {
        if (!HELD.containsKey(dir) && Files.exists(dir.resolve(LOCK_FILE))) {
          sweepIfStale(dir);
        }
      }
    } catch (IOException e) {
      LOG.debug("cannot scan {}", root, e);
    }
  }

  private static void sweepIfStale(Path dir) {
    try (FileChannel channel = FileChannel.open(dir.resolve(LOCK_FILE), StandardOpenOption.WRITE)) {
      FileLock lock;
      try {
        lock = channel.tryLock();
      } catch (OverlappingFileLockException e) {
        return; // held by this JVM
      }
      if (lock == null) {
        return; // its JVM is alive
      }
      LOG.info("Removing {}, left behind by a JVM that did not shut down", dir);
      stopOrphanedPostgres(dir);
      stopOrphanedRabbitMq(dir);
      Shutdown.deleteRecursively(dir);
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot clean up {}", dir, e);
    }
  }

  /**
   * Kills a RabbitMQ node's Erlang VM whose pid {@link RabbitNodeProcess} wrote to {@value
   * RabbitNodeProcess#PID_FILE} in {@code dir} (its data goes with the directory anyway).
   */
  private static void stopOrphanedRabbitMq(Path dir) throws IOException {
    Path pidFile = dir.resolve(RabbitNodeProcess.PID_FILE);
    if (!Files.exists(pidFile)) {
      return;
    }
    Optional<ProcessHandle> beam =
        Files.readAllLines(pidFile).stream()
            .findFirst()
            .map(String::trim)
            .filter(s -> s.matches("\\d+"))
            .flatMap(s -> ProcessHandle.of(Long.parseLong(s)))
            .filter(h -> h.info().command().map(c -> c.endsWith("beam.smp")).orElse(false));
    if (beam.isPresent()) {
      LOG.info("Killing orphaned RabbitMQ node pid {} of {}", beam.get().pid(), dir);
      beam.get().destroyForcibly();
      try {
        beam.get().onExit().get(20, TimeUnit.SECONDS);
      } catch (TimeoutException | ExecutionException e) {
        LOG.debug("orphaned RabbitMQ node {} did not exit", beam.get().pid(), e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Stops a PostgreSQL server whose data directory (with postmaster.pid) is below {@code dir}. */
  private static void stopOrphanedPostgres(Path dir) throws IOException {
    List<Path> pidFiles;
    try (Stream<Path> files = Files.walk(dir, 3)) {
      pidFiles = files.filter(p -> p.endsWith("postmaster.pid")).toList();
    }
    for (Path pidFile : pidFiles) {
      Optional<ProcessHandle> postmaster =
          Files.readAllLines(pidFile).stream()
              .findFirst()
              .map(String::trim)
              .filter(s -> s.matches("\\d+"))
              .flatMap(s -> ProcessHandle.of(Long.parseLong(s)))
              .filter(h -> h.info().command().map(c -> c.endsWith("postgres")).orElse(false));
      if (postmaster.isPresent()) {
        ProcessHandle h = postmaster.get();
        LOG.info("Stopping orphaned PostgreSQL server pid {} of {}", h.pid(), dir);
        h.destroy(); // SIGTERM: smart shutdown, its clients are gone with their JVM
        try {
          h.onExit().get(20, TimeUnit.SECONDS);
        } catch (TimeoutException | ExecutionException e) {
          h.destroyForcibly();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
