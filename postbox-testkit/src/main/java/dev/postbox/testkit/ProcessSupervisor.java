package dev.postbox.testkit;

import dev.postbox.core.CrashPoints;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * Keeps child JVMs ({@link ChildJvm}) running: restart-on-death. A watcher thread restarts every
 * wanted child as soon as it dies; each new JVM (an incarnation) may be armed with a crash point
 * (the {@link CrashPoints#PROPERTY} system property) chosen by the {@linkplain #armer armer}. Each
 * death of an incarnation is reported once to the {@link ExitListener} (with the reason the caller
 * gave when it stopped or killed it on purpose, or none), before the restart.
 *
 * <p>The demo's relays and inventory and the verify campaign's producers, relays and consumers run
 * under one each. Thread-safe.
 */
public final class ProcessSupervisor implements AutoCloseable {

  /** Builds the JVM of a child's new incarnation ({@link Supervised#incarnation()} is set). */
  @FunctionalInterface
  public interface Launcher {
    ChildJvm.Builder builder(Supervised child);
  }

  /** Told of each death of a child's incarnation, once, before any restart. */
  @FunctionalInterface
  public interface ExitListener {
    void exited(Supervised child, ChildJvm jvm);
  }

  /** One supervised process; a new JVM (incarnation) after each death. Guarded by itself. */
  public static final class Supervised {
    private final String name;
    private final Launcher launcher;
    private volatile ChildJvm jvm;
    private volatile String armed = ""; // "name@N" or ""
    private volatile int incarnation;
    private volatile boolean exitReported;
    private volatile boolean wanted;
    private volatile String expectedDeath = ""; // set before it is killed or stopped on purpose
    private volatile boolean paused;

    private Supervised(String name, Launcher launcher) {
      this.name = name;
      this.launcher = launcher;
    }

    public String name() {
      return name;
    }

    /** 1 for the first JVM, then one more for each restart. */
    public int incarnation() {
      return incarnation;
    }

    /** {@code name#incarnation}. */
    public String instance() {
      return name + "#" + incarnation;
    }

    /** The current incarnation's JVM, if one was started. */
    public Optional<ChildJvm> jvm() {
      return Optional.ofNullable(jvm);
    }

    /** The crash point the current incarnation is armed with ({@code "name@N"}), or "". */
    public String armed() {
      return armed;
    }

    /** Whether the supervisor keeps it running. */
    public boolean wanted() {
      return wanted;
    }

    /** Whether it is stopped with SIGSTOP by {@link ProcessSupervisor#pause}. */
    public boolean paused() {
      return paused;
    }

    /** Why the current incarnation was stopped or killed on purpose, or "" (it died by itself). */
    public String expectedDeath() {
      return expectedDeath;
    }

    public boolean alive() {
      ChildJvm j = jvm;
      return j != null && j.isAlive();
    }

    /** Alive and past its start-up (it printed {@code startLine}): a process doing its work. */
    public boolean working(String startLine) {
      ChildJvm j = jvm;
      if (j == null || !j.isAlive()) {
        return false;
      }
      try {
        j.awaitLogLine(startLine, Duration.ofMillis(1));
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

  private final Duration checkEvery;
  private final ExitListener onExit;
  private final List<Supervised> children = new ArrayList<>();
  private volatile Function<Supervised, Optional<String>> armer = c -> Optional.empty();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private Thread watcher;

  /**
   * A supervisor that, once {@linkplain #startWatching watching}, looks for dead children every
   * {@code checkEvery}.
   */
  public ProcessSupervisor(Duration checkEvery, ExitListener onExit) {
    this.checkEvery = checkEvery;
    this.onExit = onExit;
  }

  /** Starts the watcher thread (named "supervisor") that restarts wanted children that died. */
  public synchronized void startWatching() {
    if (watcher == null) {
      watcher = Thread.ofPlatform().name("supervisor").daemon(true).start(this::watch);
    }
  }

  /** Adds a child (not started until {@link #want}). */
  public synchronized Supervised add(String name, Launcher launcher) {
    Supervised c = new Supervised(name, launcher);
    children.add(c);
    return c;
  }

  public synchronized List<Supervised> children() {
    return List.copyOf(children);
  }

  /** Sets what each new incarnation is armed with (a crash point {@code "name@N"}, or none). */
  public void armer(Function<Supervised, Optional<String>> armer) {
    this.armer = armer;
  }

  /** Starts {@code c} (if not running) and keeps it running. */
  public void want(Supervised c) {
    synchronized (c) {
      c.wanted = true;
      if (!c.alive()) {
        start(c);
      }
    }
  }

  /**
   * Stops {@code c} with SIGTERM (its shutdown hook closes it cleanly; 20 s grace) and, if {@code
   * keep}, starts it again with the current armer; else it stays down.
   */
  public void stop(Supervised c, String reason, boolean keep) {
    synchronized (c) {
      c.wanted = keep;
      if (c.alive()) {
        if (c.paused) {
          c.jvm.resume();
          c.paused = false;
        }
        c.expectedDeath = reason;
        c.jvm.terminate(Duration.ofSeconds(20));
        reportExit(c);
      }
      if (keep) {
        start(c);
      }
    }
  }

  /** {@code kill -9} (restarted if wanted); returns whether a running process died of it. */
  public boolean kill(Supervised c, String reason) {
    synchronized (c) {
      if (!c.alive() || c.paused) {
        return false;
      }
      c.expectedDeath = reason;
      c.jvm.kill();
      boolean dead = !c.jvm.isAlive();
      reportExit(c);
      if (c.wanted) {
        start(c);
      }
      return dead;
    }
  }

  /** SIGSTOP; returns whether a running process was stopped. */
  public boolean pause(Supervised c) {
    synchronized (c) {
      if (!c.alive() || c.paused) {
        return false;
      }
      try {
        c.jvm.pause();
      } catch (IllegalStateException e) {
        // it exited between the check and the signal (a crash point, say): the kill found no
        // process, and Java's reaper reports the exit a moment later
        if (c.jvm.waitFor(Duration.ofSeconds(1)).isPresent()) {
          return false;
        }
        throw e;
      }
      c.paused = true;
      return true;
    }
  }

  /** SIGCONT; returns whether the process was paused and is still alive. */
  public boolean resume(Supervised c) {
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

  /**
   * Waits until every wanted child runs and printed {@code startLine}; a child that dies while
   * starting is waited for again (the watcher restarts it).
   */
  public void awaitStarted(String startLine, Duration timeout) {
    for (Supervised c : children()) {
      if (c.wanted) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
          ChildJvm j = c.jvm;
          try {
            j.awaitLogLine(startLine, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            break;
          } catch (RuntimeException e) {
            if (System.nanoTime() - deadline >= 0) {
              throw new IllegalStateException(c + " did not start: " + e.getMessage(), e);
            }
            sleep(200); // it died while starting; the watcher starts it again
          }
        }
      }
    }
  }

  /**
   * Stops supervising (the watcher ends first, so nothing is restarted) and stops the children in
   * {@code order} with SIGTERM, each with {@code grace}; no exit is reported. Does nothing if the
   * supervisor was already stopped or closed.
   */
  public void stopAll(List<Supervised> order, String reason, Duration grace)
      throws InterruptedException {
    if (!running.getAndSet(false)) {
      return;
    }
    Thread w;
    synchronized (this) {
      w = watcher;
    }
    if (w != null) {
      w.interrupt();
      w.join();
    }
    for (Supervised c : order) {
      synchronized (c) {
        c.wanted = false;
        ChildJvm j = c.jvm;
        if (j == null) {
          continue;
        }
        c.expectedDeath = reason;
        if (j.isPaused()) {
          j.resume();
        }
        j.terminate(grace);
      }
    }
  }

  private void watch() {
    while (running.get()) {
      for (Supervised c : children()) {
        synchronized (c) {
          if (running.get() && c.wanted && c.jvm != null && !c.jvm.isAlive()) {
            reportExit(c);
            start(c);
          }
        }
      }
      if (!sleep(checkEvery.toMillis())) {
        return;
      }
    }
  }

  /** Reports the death of {@code c}'s current incarnation (once). */
  private void reportExit(Supervised c) {
    ChildJvm j = c.jvm;
    if (j == null || j.isAlive() || c.exitReported) {
      return;
    }
    c.exitReported = true;
    onExit.exited(c, j);
  }

  private void start(Supervised c) {
    c.incarnation = c.incarnation + 1;
    c.exitReported = false;
    c.expectedDeath = "";
    c.paused = false;
    String armed = running.get() ? armer.apply(c).orElse("") : "";
    c.armed = armed;
    ChildJvm.Builder b = c.launcher.builder(c);
    if (!armed.isEmpty()) {
      b.systemProperty(CrashPoints.PROPERTY, armed);
    }
    c.jvm = b.start();
  }

  /** Sleeps; false if interrupted (the interrupt flag is set again). */
  private static boolean sleep(long ms) {
    try {
      Thread.sleep(ms);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Stops supervising and kills every child ({@code kill -9}, no exit reported). Does nothing if
   * the supervisor was already stopped.
   */
  @Override
  public void close() {
    if (!running.getAndSet(false)) {
      return;
    }
    Thread w;
    synchronized (this) {
      w = watcher;
    }
    if (w != null) {
      w.interrupt();
    }
    for (Supervised c : children()) {
      synchronized (c) {
        c.wanted = false;
        if (c.jvm != null) {
          c.expectedDeath = "supervisor closed";
          if (c.paused) {
            c.jvm.resume();
          }
          c.jvm.kill();
        }
      }
    }
  }
}
