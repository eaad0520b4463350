package dev.postbox.testkit;

import dev.postbox.testkit.internal.LogFiles;
import dev.postbox.testkit.internal.OwnedDirectories;
import dev.postbox.testkit.internal.ParentWatchdog;
import dev.postbox.testkit.internal.Shutdown;
import dev.postbox.testkit.internal.WatchdogClassPath;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A Java program running in a separate operating-system process, which a test can kill with {@code
 * kill -9}, stop with {@code SIGTERM}, freeze with {@code SIGSTOP} and watch through its log.
 *
 * <p>Build one with {@link #builder(String)}. Defaults: no arguments, no system properties, no
 * extra JVM options, the class path of the current JVM ({@code java.class.path}), the {@code java}
 * executable of the current JVM, the current working directory, and a new log file in a temporary
 * directory that is deleted when this JVM exits. The test kit's folder override ({@code
 * -Dpostbox.testkit.dir}), when set on this JVM, is passed on to the child. Standard output and
 * standard error are merged and appended to the log file, each run starting with a header line. By
 * default the child also {@linkplain Builder#dieWithParent(boolean) dies with its parent}: it halts
 * as soon as the JVM that started it is gone, even after {@code kill -9} of the parent; and a
 * shutdown hook kills every child still running when the parent JVM exits.
 *
 * <p>A {@code ChildJvm} can be {@linkplain #start() started} again after it exited (for example to
 * restart a killed relay); each run appends to the same log. {@link #awaitLogLine} only looks at
 * the output of the current run.
 *
 * <p>Thread-safe.
 */
public final class ChildJvm implements AutoCloseable {

  private static final Duration KILL_WAIT = Duration.ofSeconds(30);
  private static final Duration POLL = Duration.ofMillis(20);
  private static final int CLASS_PATH_ARGFILE_THRESHOLD = 32 * 1024;

  private final String mainClass;
  private final List<String> args;
  private final Map<String, String> systemProperties;
  private final List<String> jvmOptions;
  private final String classPath;
  private final Path javaExecutable;
  private final Optional<Path> workingDirectory;
  private final Map<String, String> environment;
  private final Path log;
  private final boolean dieWithParent;
  private final List<String> launcher;

  private volatile Process process;
  private volatile long runLogOffset;
  private volatile boolean paused;
  private volatile List<String> command = List.of();

  private ChildJvm(Builder b) {
    this.mainClass = b.mainClass;
    this.args = List.copyOf(b.args);
    this.systemProperties = Map.copyOf(b.systemProperties);
    this.jvmOptions = List.copyOf(b.jvmOptions);
    this.classPath = b.classPath.orElseGet(() -> System.getProperty("java.class.path", ""));
    this.javaExecutable = b.javaExecutable.orElseGet(ChildJvm::currentJava);
    this.workingDirectory = b.workingDirectory;
    this.environment = Map.copyOf(b.environment);
    this.dieWithParent = b.dieWithParent;
    this.launcher = List.copyOf(b.launcher);
    this.log = b.log.orElseGet(() -> tempLog(mainClass));
  }

  /** A builder for a child JVM that runs {@code mainClass}. */
  public static Builder builder(String mainClass) {
    return new Builder(mainClass);
  }

  /** A builder for a child JVM that runs {@code mainClass}. */
  public static Builder builder(Class<?> mainClass) {
    return new Builder(mainClass.getName());
  }

  /**
   * Starts the process and returns at once (use {@link #awaitLogLine} to wait until it is ready).
   *
   * @throws IllegalStateException if it is already running
   * @throws UncheckedIOException if the process cannot be started
   */
  public synchronized ChildJvm start() {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException("already running: " + this);
    }
    List<String> cmd = buildCommand();
    try {
      if (log.getParent() != null) {
        Files.createDirectories(log.getParent());
      }
      String header =
          "----- " + Instant.now() + " postbox-testkit ChildJvm starting " + mainClass + " -----\n";
      Files.writeString(
          log,
          header,
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
      runLogOffset = LogFiles.size(log);
      ProcessBuilder pb = new ProcessBuilder(cmd);
      pb.redirectErrorStream(true);
      pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      // stdin stays a pipe from this JVM: its end of file tells the watchdog that we are gone.
      pb.redirectInput(ProcessBuilder.Redirect.PIPE);
      workingDirectory.ifPresent(d -> pb.directory(d.toFile()));
      pb.environment().putAll(environment);
      Process p = pb.start();
      Shutdown.killOnExit(p);
      paused = false;
      command = List.copyOf(cmd);
      process = p;
      return this;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + mainClass + ": " + cmd, e);
    }
  }

  /**
   * The process id of the current (or last) run.
   *
   * @throws IllegalStateException if never started
   */
  public long pid() {
    return requireStarted().pid();
  }

  /** Whether the process is running (a {@linkplain #pause() paused} process is running). */
  public boolean isAlive() {
    Process p = process;
    return p != null && p.isAlive();
  }

  /** Whether the process was {@linkplain #pause() paused} and not resumed since. */
  public boolean isPaused() {
    return paused && isAlive();
  }

  /**
   * Kills the process with {@code SIGKILL} ({@code kill -9}) and waits until it is gone. No effect
   * if it is not running.
   *
   * @throws IllegalStateException if it still runs after 30 seconds
   */
  public synchronized void kill() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    p.destroyForcibly();
    awaitGone(p, KILL_WAIT);
    paused = false;
  }

  /**
   * Stops the process with {@code SIGTERM} (the JVM runs its shutdown hooks), waits up to {@code
   * grace}, then kills it with {@code SIGKILL} if it is still running.
   *
   * @return the exit code (143 after {@code SIGTERM} unless a shutdown hook halts with another
   *     code, 137 if it had to be killed)
   * @throws IllegalStateException if never started
   */
  public synchronized int terminate(Duration grace) {
    Process p = requireStarted();
    if (p.isAlive()) {
      // Not Process.destroy(): it also closes our end of the child's stdin, which the watchdog
      // takes for the death of this JVM and halts the child before its shutdown hooks finish.
      p.toHandle().destroy();
      if (paused) {
        signal("CONT", p.pid());
        paused = false;
      }
      if (!waitFor(p, grace)) {
        p.destroyForcibly();
        awaitGone(p, KILL_WAIT);
      }
    }
    return p.exitValue();
  }

  /**
   * Freezes the process with {@code SIGSTOP}: it keeps its sockets and memory but runs no code
   * (like a long GC pause or a stalled VM) until {@link #resume()}.
   *
   * @throws IllegalStateException if it is not running
   */
  public synchronized void pause() {
    Process p = requireAlive();
    signal("STOP", p.pid());
    paused = true;
  }

  /**
   * Continues a {@linkplain #pause() paused} process with {@code SIGCONT}.
   *
   * @throws IllegalStateException if it is not running
   */
  public synchronized void resume() {
    Process p = requireAlive();
    signal("CONT", p.pid());
    paused = false;
  }

  /**
   * Waits up to {@code timeout} for the process to exit.
   *
   * @return its exit code, or empty if it is still running
   * @throws IllegalStateException if never started
   */
  public Optional<Integer> waitFor(Duration timeout) {
    Process p = requireStarted();
    return waitFor(p, timeout) ? Optional.of(p.exitValue()) : Optional.empty();
  }

  /** The exit code of the last run, or empty if it is running or was never started. */
  public Optional<Integer> exitCode() {
    Process p = process;
    return p == null || p.isAlive() ? Optional.empty() : Optional.of(p.exitValue());
  }

  /**
   * Waits until the current run has written a line that contains {@code text}.
   *
   * @return the first such line
   * @throws LogLineTimeoutException if none appeared within {@code timeout}
   * @throws ChildJvmExitedException if the process exited before writing one
   */
  public String awaitLogLine(String text, Duration timeout) {
    Objects.requireNonNull(text, "text");
    return awaitLogLine(line -> line.contains(text), "a line containing '" + text + "'", timeout);
  }

  /**
   * Waits until the current run has written a line that matches {@code predicate}.
   *
   * @return the first such line
   * @throws LogLineTimeoutException if none appeared within {@code timeout}
   * @throws ChildJvmExitedException if the process exited before writing one
   */
  public String awaitLogLine(Predicate<String> predicate, Duration timeout) {
    return awaitLogLine(predicate, "a line matching the predicate", timeout);
  }

  private String awaitLogLine(Predicate<String> predicate, String what, Duration timeout) {
    Objects.requireNonNull(predicate, "predicate");
    Process p = requireStarted();
    long from = runLogOffset;
    LogFiles.Cursor cursor = new LogFiles.Cursor(log, from);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      boolean exited = !p.isAlive();
      for (String line : cursor.readLines()) {
        if (predicate.test(line)) {
          return line;
        }
      }
      if (exited) {
        Optional<String> partial = cursor.partialLine();
        if (partial.isPresent() && predicate.test(partial.get())) {
          return partial.get();
        }
        throw new ChildJvmExitedException(
            mainClass
                + " (pid "
                + p.pid()
                + ") exited with code "
                + p.exitValue()
                + " before writing "
                + what
                + "; log "
                + log
                + " ends with:\n"
                + LogFiles.tail(log, from, 40),
            p.exitValue(),
            log);
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new LogLineTimeoutException(
            mainClass
                + " (pid "
                + p.pid()
                + ") did not write "
                + what
                + " within "
                + timeout
                + "; log "
                + log
                + " ends with:\n"
                + LogFiles.tail(log, from, 40),
            log,
            timeout);
      }
      waitFor(p, POLL);
    }
  }

  /** The log file (standard output and standard error of every run, appended). */
  public Path log() {
    return log;
  }

  /** The output of the current run so far: its last {@code maxLines} lines. */
  public String logTail(int maxLines) {
    return LogFiles.tail(log, runLogOffset, maxLines);
  }

  /** The main class. */
  public String mainClass() {
    return mainClass;
  }

  /** The command line of the current (or last) run; empty before the first start. */
  public List<String> command() {
    return command;
  }

  /** Kills the process if it is running ({@link #kill()}). */
  @Override
  public void close() {
    kill();
  }

  @Override
  public String toString() {
    Process p = process;
    return "ChildJvm["
        + mainClass
        + (p == null ? ", not started" : ", pid " + p.pid() + (p.isAlive() ? "" : ", exited"))
        + ", log "
        + log
        + "]";
  }

  private List<String> buildCommand() {
    List<String> cmd = new ArrayList<>(launcher);
    cmd.add(javaExecutable.toString());
    cmd.addAll(jvmOptions);
    systemProperties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
    String testkitDir = System.getProperty(OwnedDirectories.DIR_PROPERTY);
    if (testkitDir != null && !systemProperties.containsKey(OwnedDirectories.DIR_PROPERTY)) {
      // the child's test kit (if it uses one) keeps its folders where this JVM keeps them
      cmd.add("-D" + OwnedDirectories.DIR_PROPERTY + "=" + testkitDir);
    }
    cmd.add("-Dstdout.encoding=UTF-8");
    cmd.add("-Dstderr.encoding=UTF-8");
    String cp = classPath;
    if (dieWithParent) {
      String watchdog = WatchdogClassPath.directory().toString();
      cp = cp.isEmpty() ? watchdog : watchdog + File.pathSeparator + cp;
    }
    if (cp.length() > CLASS_PATH_ARGFILE_THRESHOLD) {
      cmd.add("@" + classPathArgFile(cp));
    } else if (!cp.isEmpty()) {
      cmd.add("-cp");
      cmd.add(cp);
    }
    if (dieWithParent) {
      cmd.add(ParentWatchdog.class.getName());
    }
    cmd.add(mainClass);
    cmd.addAll(args);
    return cmd;
  }

  /** Linux limits one argument to 128 KiB; a long class path goes into a java @argfile. */
  private Path classPathArgFile(String cp) {
    try {
      Path file = Files.createTempFile("postbox-childjvm-cp-", ".args");
      file.toFile().deleteOnExit();
      String quoted = "\"" + cp.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
      Files.writeString(file, "-cp\n" + quoted + "\n", StandardCharsets.UTF_8);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write class path argument file", e);
    }
  }

  private Process requireStarted() {
    Process p = process;
    if (p == null) {
      throw new IllegalStateException("not started: " + this);
    }
    return p;
  }

  private Process requireAlive() {
    Process p = requireStarted();
    if (!p.isAlive()) {
      throw new IllegalStateException("not running: " + this);
    }
    return p;
  }

  private static boolean waitFor(Process p, Duration timeout) {
    try {
      return p.waitFor(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for pid " + p.pid(), e);
    }
  }

  private void awaitGone(Process p, Duration timeout) {
    if (!waitFor(p, timeout)) {
      throw new IllegalStateException("pid " + p.pid() + " still alive after " + timeout);
    }
  }

  private static void signal(String signal, long pid) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
              .redirectErrorStream(true)
              .start();
      String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      int code = kill.waitFor();
      if (code != 0) {
        throw new IllegalStateException(
            "kill -" + signal + " " + pid + " failed with exit code " + code + ": " + out.trim());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run kill -" + signal + " " + pid, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while signalling pid " + pid, e);
    }
  }

  private static Path currentJava() {
    return ProcessHandle.current()
        .info()
        .command()
        .map(Path::of)
        .filter(Files::isExecutable)
        .orElseGet(() -> Path.of(System.getProperty("java.home"), "bin", "java"));
  }

  private static Path tempLog(String mainClass) {
    String simple = mainClass.substring(mainClass.lastIndexOf('.') + 1).replace('$', '.');
    try {
      return Files.createTempFile(DefaultLogs.DIR, simple + "-", ".log");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a log file", e);
    }
  }

  /** This JVM's directory for default logs, deleted when it exits. */
  private static final class DefaultLogs {
    static final Path DIR = OwnedDirectories.create("logs-");
  }

  /**
   * Configures a {@link ChildJvm}. Not thread-safe; {@link #build()} copies everything, so a
   * builder can be reused.
   */
  public static final class Builder {
    private final String mainClass;
    private final List<String> args = new ArrayList<>();
    private final Map<String, String> systemProperties = new LinkedHashMap<>();
    private final List<String> jvmOptions = new ArrayList<>();
    private final Map<String, String> environment = new LinkedHashMap<>();
    private Optional<String> classPath = Optional.empty();
    private Optional<Path> javaExecutable = Optional.empty();
    private Optional<Path> workingDirectory = Optional.empty();
    private Optional<Path> log = Optional.empty();
    private boolean dieWithParent = true;
    private final List<String> launcher = new ArrayList<>();

    private Builder(String mainClass) {
      if (Objects.requireNonNull(mainClass, "mainClass").isBlank()) {
        throw new IllegalArgumentException("mainClass must not be blank");
      }
      this.mainClass = mainClass;
    }

    /** Appends program arguments. */
    public Builder args(String... args) {
      return args(List.of(args));
    }

    /** Appends program arguments. */
    public Builder args(List<String> args) {
      this.args.addAll(args);
      return this;
    }

    /** Sets a system property ({@code -Dname=value}). */
    public Builder systemProperty(String name, String value) {
      systemProperties.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
      return this;
    }

    /** Appends JVM options, for example {@code -Xmx256m}. */
    public Builder jvmOptions(String... options) {
      jvmOptions.addAll(List.of(options));
      return this;
    }

    /** Sets an environment variable of the child (on top of this JVM's environment). */
    public Builder environment(String name, String value) {
      environment.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
      return this;
    }

    /** The class path ({@code :}-separated); default: this JVM's {@code java.class.path}. */
    public Builder classPath(String classPath) {
      this.classPath = Optional.of(classPath);
      return this;
    }

    /** The class path as a list of entries; default: this JVM's {@code java.class.path}. */
    public Builder classPath(List<Path> entries) {
      return classPath(
          String.join(File.pathSeparator, entries.stream().map(Path::toString).toList()));
    }

    /** The {@code java} executable; default: the one running this JVM. */
    public Builder javaExecutable(Path java) {
      this.javaExecutable = Optional.of(java);
      return this;
    }

    /**
     * A command the {@code java} command line is handed to, for example {@code ip netns exec
     * <namespace>} to run the JVM in a network namespace. It must replace itself with the JVM
     * ({@code exec}), so that the process id, {@link #kill()} and {@link #pause()} stay the JVM's.
     * Default: none.
     */
    public Builder launcher(String... command) {
      launcher.clear();
      launcher.addAll(List.of(command));
      return this;
    }

    /** The working directory; default: this JVM's. */
    public Builder workingDirectory(Path dir) {
      this.workingDirectory = Optional.of(dir);
      return this;
    }

    /**
     * The log file (created if missing, appended to); default: a new file in a temporary directory
     * deleted at JVM exit.
     */
    public Builder log(Path log) {
      this.log = Optional.of(log);
      return this;
    }

    /**
     * Whether the child halts (exit code 137) as soon as this JVM is gone, even if this JVM is
     * killed with {@code kill -9}; default {@code true}. It works by watching the end of file on
     * the child's standard input, so turn it off for a main class that reads standard input.
     */
    public Builder dieWithParent(boolean dieWithParent) {
      this.dieWithParent = dieWithParent;
      return this;
    }

    /** A child JVM with this configuration, not yet started. */
    public ChildJvm build() {
      return new ChildJvm(this);
    }

    /** Builds and {@linkplain ChildJvm#start() starts} the child JVM. */
    public ChildJvm start() {
      return build().start();
    }
  }
}
