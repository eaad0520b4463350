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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Temporary data directories under {@code ${java.io.tmpdir}/postbox-testkit}, each locked by the
 * JVM that owns it. A JVM that dies without running its shutdown hooks ({@code kill -9}) leaves its
 * directories behind, and maybe a PostgreSQL server; the next JVM that creates a directory here
 * finds them by their released lock, stops such a server and deletes them. Thread-safe.
 */
public final class OwnedDirectories {

  private static final Logger LOG = LoggerFactory.getLogger(OwnedDirectories.class);
  private static final String LOCK_FILE = ".owner.lock";
  private static final Map<Path, FileChannel> HELD = new ConcurrentHashMap<>();

  private OwnedDirectories() {}

  /** The parent of all owned directories. */
  public static Path root() {
    return Path.of(System.getProperty("java.io.tmpdir"), "postbox-testkit");
  }

  /**
   * Cleans up after dead JVMs, then creates a new directory named {@code prefix...}, locked by this
   * JVM and deleted when it exits.
   */
  public static Path create(String prefix) {
    try {
      Path root = Files.createDirectories(root());
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
      throw new UncheckedIOException("cannot create a data directory under " + root(), e);
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
      Shutdown.deleteRecursively(dir);
    } catch (IOException | RuntimeException e) {
      LOG.debug("cannot clean up {}", dir, e);
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
