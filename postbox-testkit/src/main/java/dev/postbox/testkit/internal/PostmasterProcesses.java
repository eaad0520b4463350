package dev.postbox.testkit.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Finds and kills the processes of one embedded PostgreSQL data directory: {@code pg_ctl}, the
 * shell it starts the postmaster with, the postmaster (each names the data directory on its command
 * line) and the postmaster's server processes (its descendants).
 *
 * <p>zonky's {@code EmbeddedPostgres} cannot do this itself: when its start-up wait runs out it
 * throws from its constructor, leaving {@code pg_ctl -w start} and the postmaster running with no
 * handle to stop them, and the data directory's lock file locked by this JVM.
 */
final class PostmasterProcesses {

  private final Path data;

  PostmasterProcesses(Path data) {
    this.data = data.toAbsolutePath().normalize();
  }

  /**
   * How long the sweep must find nothing before it is done: a process between {@code fork} and
   * {@code exec} on a loaded machine can show no command line for a moment.
   */
  static final Duration QUIET = Duration.ofMillis(250);

  /**
   * The postmaster named by {@code postmaster.pid}, if that process is alive and is this data
   * directory's: a killed postmaster leaves its file behind, and on a busy machine its process id
   * is soon another process's (32,768 ids, and every thread of every JVM takes one).
   */
  Optional<ProcessHandle> postmaster() {
    Path pidFile = data.resolve("postmaster.pid");
    try {
      List<String> lines = Files.readAllLines(pidFile);
      if (lines.isEmpty() || lines.get(0).isBlank()) {
        return Optional.empty();
      }
      return ProcessHandle.of(Long.parseLong(lines.get(0).trim()))
          .filter(ProcessHandle::isAlive)
          .filter(this::ofThisDirectory);
    } catch (IOException | NumberFormatException e) {
      return Optional.empty(); // no file, or one being written: no postmaster to name
    }
  }

  /**
   * Kills every process of this data directory and waits (up to {@code timeout}) until none is
   * left. Sweeps until the passes have found nothing for {@link #QUIET}: a {@code pg_ctl} killed
   * mid-start can have forked its shell just before.
   *
   * @return how many processes were killed
   * @throws IllegalStateException if some are still alive after {@code timeout}
   */
  int killAll(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    Set<ProcessHandle> killed = new LinkedHashSet<>();
    long quietSince = System.nanoTime();
    while (true) {
      List<ProcessHandle> found = find();
      found.forEach(ProcessHandle::destroyForcibly);
      killed.addAll(found);
      boolean anyAlive = killed.stream().anyMatch(ProcessHandle::isAlive);
      if (!found.isEmpty() || anyAlive) {
        quietSince = System.nanoTime();
      } else if (System.nanoTime() - quietSince >= QUIET.toNanos()) {
        return killed.size();
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "PostgreSQL processes of " + data + " still alive after " + timeout + ": " + found);
      }
      Thread.sleep(20);
    }
  }

  /** Waits up to {@code timeout} for the postmaster to exit on its own; true if none is left. */
  boolean awaitExit(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (postmaster().isPresent() || !find().isEmpty()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(50);
    }
    return true;
  }

  /** Whether {@code p}'s command line names this data directory. */
  private boolean ofThisDirectory(ProcessHandle p) {
    return p.info().commandLine().map(c -> c.contains(data.toString())).orElse(false);
  }

  /** The live processes of this data directory, each with its descendants (a snapshot). */
  private List<ProcessHandle> find() {
    List<ProcessHandle> roots = new ArrayList<>();
    postmaster().ifPresent(roots::add);
    try (Stream<ProcessHandle> all = ProcessHandle.allProcesses()) {
      all.filter(p -> p.pid() != ProcessHandle.current().pid())
          .filter(this::ofThisDirectory)
          .forEach(roots::add);
    }
    Set<ProcessHandle> result = new LinkedHashSet<>();
    for (ProcessHandle root : roots) {
      List<ProcessHandle> descendants = root.descendants().toList();
      result.add(root);
      result.addAll(descendants);
    }
    result.removeIf(p -> !p.isAlive());
    return List.copyOf(result);
  }
}
