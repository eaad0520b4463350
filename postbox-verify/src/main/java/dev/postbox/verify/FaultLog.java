package dev.postbox.verify;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;

/**
 * The fault log of a campaign: one line per scheduled fault (what, when, which process, fired or
 * not and why), appended to {@code faults.log} in the report directory, and counters per scenario.
 *
 * <p>Thread-safe.
 */
final class FaultLog implements AutoCloseable {

  private final Writer out;
  private String scenario = "-";
  private Map<String, Integer> fired = new TreeMap<>();
  private Map<String, Integer> notFired = new TreeMap<>();
  private int unexpectedExits;

  FaultLog(Path file) {
    try {
      Files.createDirectories(file.getParent());
      out =
          Files.newBufferedWriter(
              file, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Starts counting for {@code name}. */
  synchronized void beginScenario(String name) {
    scenario = name;
    fired = new TreeMap<>();
    notFired = new TreeMap<>();
    unexpectedExits = 0;
    line("scenario", "-", "begin", "");
  }

  /** A fault that was observed to happen. */
  synchronized void fired(String kind, String target, String detail) {
    fired.merge(kind, 1, Integer::sum);
    line(kind, target, "fired", detail);
  }

  /** A scheduled fault that did not happen, and why. */
  synchronized void notFired(String kind, String target, String why) {
    notFired.merge(kind, 1, Integer::sum);
    line(kind, target, "not-fired", why);
  }

  /** A child that exited though nothing was injected into it. */
  synchronized void unexpectedExit(String target, String detail) {
    unexpectedExits++;
    line("unexpected-exit", target, "observed", detail);
  }

  /** Anything else worth keeping (heal, drain, violations found). */
  synchronized void note(String what, String detail) {
    line(what, "-", "note", detail);
  }

  synchronized Map<String, Integer> fired() {
    return new TreeMap<>(fired);
  }

  synchronized Map<String, Integer> notFired() {
    return new TreeMap<>(notFired);
  }

  synchronized int unexpectedExits() {
    return unexpectedExits;
  }

  private void line(String kind, String target, String outcome, String detail) {
    try {
      out.write(
          Instant.now()
              + " "
              + scenario
              + " "
              + kind
              + " "
              + target
              + " "
              + outcome
              + (detail.isEmpty() ? "" : " " + detail.replace('\n', ' '))
              + "\n");
      out.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public synchronized void close() {
    try {
      out.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
