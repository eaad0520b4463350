package dev.postbox.verify;

import dev.postbox.core.CrashPoints;
import dev.postbox.testkit.ChildJvm;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * The supervised child processes of a campaign (producer, relays, consumers): a supervisor thread
 * restarts every wanted child as soon as it dies, armed with the next crash point the scenario's
 * schedule gives it (or none), and records in the {@link FaultLog} whether an armed crash point
 * fired ({@code POSTBOX-CRASH <name>} printed and exit code 86) or the process died of something
 * else.
 *
 * <p>Thread-safe.
 */
final class Fleet implements AutoCloseable {

  enum Role {
    PRODUCER,
    RELAY,
    CONSUMER
  }

  /** One supervised process; a new JVM (incarnation) after each death. */
  static final class Child {
    final String name;
    final Role role;
    final BiFunction<Integer, String, ChildJvm.Builder> builder; // (incarnation, instance) -> jvm
    volatile ChildJvm jvm;
    volatile String armed = ""; // "name@N" or ""
    volatile int incarnation;
    volatile boolean wanted;
    volatile String expectedDeath = ""; // set by the harness before it kills or stops this child
    volatile boolean paused;

    Child(String name, Role role, BiFunction<Integer, String, ChildJvm.Builder> builder) {
      this.name = name;
      this.role = role;
      this.builder = builder;
    }

    String instance() {
      return name + "#" + incarnation;
    }

    boolean alive() {
      ChildJvm j = jvm;
      return j != null && j.isAlive();
    }

    /** Alive and past its start-up (it printed its start line): a process doing its work. */
    boolean working() {
      ChildJvm j = jvm;
      if (j == null || !j.isAlive()) {
        return false;
      }
      try {
        j.awaitLogLine(" started", Duration.ofMillis(1));
        return true;
      } catch (RuntimeException e) {
        return false;
      }
    }

    @Override
    public String toString() {
      ChildJvm j = jvm;
      return instance() + (j != null && j.isAlive() ? "(pid " + j.pid() + ")" : "");
    }
  }

  private final FaultLog log;
  private final List<Child> children = new ArrayList<>();
  private volatile Function<Child, Optional<String>> armer = c -> Optional.empty();
  private volatile boolean running = true;
  private final Thread supervisor;

  Fleet(FaultLog log) {
    this.log = log;
    this.supervisor = Thread.ofPlatform().name("supervisor").daemon(true).start(this::supervise);
  }

  /** Adds a child (not started until {@link #want}). */
  synchronized Child add(
      String name, Role role, BiFunction<Integer, String, ChildJvm.Builder> builder) {
    Child c = new Child(name, role, builder);
    children.add(c);
    return c;
  }

  synchronized List<Child> children() {
    return List.copyOf(children);
  }

  /** Sets what each new incarnation is armed with. */
  void armer(Function<Child, Optional<String>> armer) {
    this.armer = armer;
  }

  /** Starts {@code c} (if not running) and keeps it running. */
  void want(Child c) {
    synchronized (c) {
      c.wanted = true;
      if (!c.alive()) {
        start(c);
      }
    }
  }

  /**
   * Stops {@code c} with SIGTERM (its shutdown hook closes it cleanly) and, if {@code keep}, starts
   * it again with the current armer; else it stays down.
   */
  void stop(Child c, String reason, boolean keep) {
    synchronized (c) {
      c.wanted = keep;
      if (c.alive()) {
        if (c.paused) {
          c.jvm.resume();
          c.paused = false;
        }
        c.expectedDeath = reason;
        c.jvm.terminate(Duration.ofSeconds(20));
        recordExit(c);
      }
      if (keep) {
        start(c);
      }
    }
  }

  /** {@code kill -9}; returns whether a running process died of it. */
  boolean kill(Child c) {
    synchronized (c) {
      if (!c.alive() || c.paused) {
        return false;
      }
      c.expectedDeath = "kill-9";
      c.jvm.kill();
      boolean dead = !c.jvm.isAlive();
      recordExit(c);
      if (c.wanted) {
        start(c);
      }
      return dead;
    }
  }

  /** SIGSTOP; returns whether a running process was stopped. */
  boolean pause(Child c) {
    synchronized (c) {
      if (!c.alive() || c.paused) {
        return false;
      }
      c.jvm.pause();
      c.paused = true;
      return true;
    }
  }

  /** SIGCONT; returns whether the process was paused and is still alive. */
  boolean resume(Child c) {
    synchronized (c) {
      if (!c.paused) {
        return false;
      }
      c.paused = false;
      if (!c.alive()) {
        return false;
      }
      c.jvm.resume();
      return true;
    }
  }

  /** Waits until every wanted child runs and printed its start line. */
  void awaitStarted(Duration timeout) {
    for (Child c : children()) {
      if (c.wanted) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
          ChildJvm j = c.jvm;
          try {
            j.awaitLogLine(" started", Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            break;
          } catch (RuntimeException e) {
            if (System.nanoTime() - deadline >= 0) {
              throw new IllegalStateException(c + " did not start: " + e.getMessage(), e);
            }
            sleep(200); // it died while starting; the supervisor starts it again
          }
        }
      }
    }
  }

  private void supervise() {
    while (running) {
      for (Child c : children()) {
        synchronized (c) {
          if (running && c.wanted && c.jvm != null && !c.jvm.isAlive()) {
            recordExit(c);
            start(c);
          }
        }
      }
      sleep(25);
    }
  }

  /** Classifies the death of {@code c}'s current incarnation (once). */
  private void recordExit(Child c) {
    ChildJvm j = c.jvm;
    if (j == null || j.isAlive() || c.incarnation < 0) {
      return;
    }
    int code = j.exitCode().orElse(-1);
    String armed = c.armed;
    String point = armed.contains("@") ? armed.substring(0, armed.lastIndexOf('@')) : armed;
    boolean crashed =
        code == CrashPoints.EXIT_CODE
            && !point.isEmpty()
            && j.logTail(40).contains(CrashPoints.MARKER + " " + point);
    if (crashed) {
      log.fired(point, c.instance(), "exit " + code + " (armed " + armed + ")");
    } else {
      if (!point.isEmpty()) {
        log.notFired(
            point,
            c.instance(),
            "armed "
                + armed
                + "; ended by "
                + (c.expectedDeath.isEmpty() ? "exit " + code : c.expectedDeath));
      }
      if (c.expectedDeath.isEmpty()) {
        log.unexpectedExit(c.instance(), "exit " + code + "; log " + j.log());
      }
    }
    c.incarnation = -c.incarnation; // recorded; start() makes it positive again
  }

  private void start(Child c) {
    int incarnation = Math.abs(c.incarnation) + 1;
    c.incarnation = incarnation;
    c.expectedDeath = "";
    c.paused = false;
    String armed = running ? armer.apply(c).orElse("") : "";
    c.armed = armed;
    ChildJvm.Builder b = c.builder.apply(incarnation, c.instance());
    if (!armed.isEmpty()) {
      b.systemProperty(CrashPoints.PROPERTY, armed);
    }
    c.jvm = b.start();
  }

  /** Common JVM options of the children: small heaps, quick start. */
  static ChildJvm.Builder jvm(Class<?> main, Path dir, String name, String heap) {
    return ChildJvm.builder(main)
        .log(dir.resolve(name + ".log"))
        .jvmOptions(
            "-Xmx" + heap,
            "-Xss512k",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "--enable-native-access=ALL-UNNAMED",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.showDateTime=true");
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops the supervisor and kills every child. */
  @Override
  public void close() {
    running = false;
    for (Child c : children()) {
      synchronized (c) {
        c.wanted = false;
        if (c.jvm != null) {
          c.expectedDeath = "end of campaign";
          if (c.paused) {
            c.jvm.resume();
          }
          c.jvm.kill();
        }
      }
    }
  }
}
