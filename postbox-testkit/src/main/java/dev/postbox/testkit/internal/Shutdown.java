package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The test kit's single JVM shutdown hook: it first runs registered actions (closing servers), then
 * kills every child process still alive, then deletes registered directories. Thread-safe.
 */
public final class Shutdown {

  private static final Logger LOG = LoggerFactory.getLogger(Shutdown.class);

  private static final Set<Process> PROCESSES = ConcurrentHashMap.newKeySet();
  private static final Set<Runnable> ACTIONS = ConcurrentHashMap.newKeySet();
  private static final Set<Path> DIRECTORIES = ConcurrentHashMap.newKeySet();
  private static volatile boolean installed;

  private Shutdown() {}

  /** Kills {@code process} at JVM exit, unless it has exited by then. */
  public static void killOnExit(Process process) {
    install();
    PROCESSES.add(process);
    process.onExit().thenRun(() -> PROCESSES.remove(process));
  }

  /** Runs {@code action} at JVM exit, before child processes are killed. */
  public static void runOnExit(Runnable action) {
    install();
    ACTIONS.add(action);
  }

  /** No longer runs {@code action} at JVM exit. */
  public static void cancel(Runnable action) {
    ACTIONS.remove(action);
  }

  /** Deletes {@code dir} recursively at JVM exit, after child processes are killed. */
  public static void deleteOnExit(Path dir) {
    install();
    DIRECTORIES.add(dir);
  }

  /** Deletes {@code path} and everything below it; a missing path is not an error. */
  public static void deleteRecursively(Path path) {
    if (!Files.exists(path)) {
      return;
    }
    try {
      Files.walkFileTree(
          path,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
                throws IOException {
              Files.deleteIfExists(file);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
              if (e instanceof NoSuchFileException) {
                return FileVisitResult.CONTINUE;
              }
              throw e;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
              Files.deleteIfExists(dir);
              return FileVisitResult.CONTINUE;
            }
          });
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + path, e);
    }
  }

  private static void install() {
    if (installed) {
      return;
    }
    synchronized (Shutdown.class) {
      if (!installed) {
        Runtime.getRuntime()
            .addShutdownHook(new Thread(Shutdown::runHook, "postbox-testkit-shutdown"));
        installed = true;
      }
    }
  }

  private static void runHook() {
    for (Runnable action : List.copyOf(ACTIONS)) {
      try {
        action.run();
      } catch (RuntimeException e) {
        LOG.warn("shutdown action failed", e);
      }
    }
    List<Process> alive = new ArrayList<>(PROCESSES);
    for (Process p : alive) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
    for (Process p : alive) {
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    for (Path dir : DIRECTORIES) {
      try {
        deleteRecursively(dir);
      } catch (RuntimeException e) {
        LOG.warn("cannot delete {}", dir, e);
      }
    }
  }
}
