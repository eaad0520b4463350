package dev.postbox.verify;

import dev.postbox.core.CrashPoints;
import dev.postbox.testkit.ChildJvm;
import dev.postbox.testkit.ProcessSupervisor;
import dev.postbox.testkit.ProcessSupervisor.Supervised;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * The supervised child processes of a campaign (producer, relays, consumers), on the test kit's
 * {@link ProcessSupervisor}: every wanted child is restarted as soon as it dies, armed with the
 * next crash point the scenario's schedule gives it (or none); this class records in the {@link
 * FaultLog} whether an armed crash point fired ({@code POSTBOX-CRASH <name>} printed and exit code
 * 86) or the process died of something else.
 *
 * <p>Thread-safe.
 */
final class Fleet implements AutoCloseable {

  /** What the children print once started (ChildSupport's start line). */
  private static final String STARTED = " started";

  enum Role {
    PRODUCER,
    RELAY,
    CONSUMER
  }

  /** One supervised process of a role; a new JVM (incarnation) after each death. */
  record Child(Supervised process, Role role) {

    String name() {
      return process.name();
    }

    String instance() {
      return process.instance();
    }

    /** The crash point its current incarnation is armed with ({@code "name@N"}), or "". */
    String armed() {
      return process.armed();
    }

    boolean wanted() {
      return process.wanted();
    }

    boolean paused() {
      return process.paused();
    }

    boolean alive() {
      return process.alive();
    }

    /** Alive and past its start-up (it printed its start line): a process doing its work. */
    boolean working() {
      return process.working(STARTED);
    }

    /** The last {@code maxLines} lines its current incarnation wrote, or why there are none. */
    String logTail(int maxLines) {
      try {
        return process.jvm().map(j -> j.logTail(maxLines)).orElse("(never started)");
      } catch (RuntimeException e) {
        return "(log not readable: " + e + ")";
      }
    }

    @Override
    public String toString() {
      return process.toString();
    }
  }

  private final FaultLog log;
  private final ProcessSupervisor supervisor;
  private final Map<Supervised, Child> children = new ConcurrentHashMap<>();

  Fleet(FaultLog log) {
    this.log = log;
    this.supervisor = new ProcessSupervisor(Duration.ofMillis(25), this::recordExit);
    supervisor.startWatching();
  }

  /** Adds a child (not started until {@link #want}). */
  synchronized Child add(
      String name, Role role, BiFunction<Integer, String, ChildJvm.Builder> builder) {
    Child c =
        new Child(supervisor.add(name, p -> builder.apply(p.incarnation(), p.instance())), role);
    children.put(c.process(), c);
    return c;
  }

  synchronized List<Child> children() {
    return supervisor.children().stream().map(children::get).toList();
  }

  /** Sets what each new incarnation is armed with. */
  void armer(Function<Child, Optional<String>> armer) {
    supervisor.armer(p -> armer.apply(children.get(p)));
  }

  /** Starts {@code c} (if not running) and keeps it running. */
  void want(Child c) {
    supervisor.want(c.process());
  }

  /**
   * Stops {@code c} with SIGTERM (its shutdown hook closes it cleanly) and, if {@code keep}, starts
   * it again with the current armer; else it stays down.
   */
  void stop(Child c, String reason, boolean keep) {
    supervisor.stop(c.process(), reason, keep);
  }

  /** {@code kill -9}; returns whether a running process died of it. */
  boolean kill(Child c) {
    return supervisor.kill(c.process(), "kill-9");
  }

  /** SIGSTOP; returns whether a running process was stopped. */
  boolean pause(Child c) {
    return supervisor.pause(c.process());
  }

  /** SIGCONT; returns whether the process was paused and is still alive. */
  boolean resume(Child c) {
    return supervisor.resume(c.process());
  }

  /** Waits until every wanted child runs and printed its start line. */
  void awaitStarted(Duration timeout) {
    supervisor.awaitStarted(STARTED, timeout);
  }

  /** Classifies the death of {@code c}'s incarnation {@code j} (the supervisor reports it once). */
  private void recordExit(Supervised c, ChildJvm j) {
    int code = j.exitCode().orElse(-1);
    String armed = c.armed();
    String point = armed.contains("@") ? armed.substring(0, armed.lastIndexOf('@')) : armed;
    boolean crashed =
        code == CrashPoints.EXIT_CODE
            && !point.isEmpty()
            && j.logTail(40).contains(CrashPoints.MARKER + " " + point);
    String expectedDeath = c.expectedDeath();
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
                + (expectedDeath.isEmpty() ? "exit " + code : expectedDeath));
      }
      if (expectedDeath.isEmpty()) {
        log.unexpectedExit(c.instance(), "exit " + code + "; log " + j.log());
      }
    }
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

  /** Stops the supervisor and kills every child. */
  @Override
  public void close() {
    supervisor.close();
  }
}
