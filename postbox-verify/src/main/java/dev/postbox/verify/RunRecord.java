package dev.postbox.verify;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Where a campaign run came from, written into its JSON report so that a committed report can be
 * recounted by {@link Ledger} without trusting anyone's notes: the command, the transport, relay
 * and consumer mode, the commit of the code that ran (and whether the work tree had changes), the
 * machine, and every fault of its fault log with its kind, target, time and outcome.
 *
 * @param command the arguments of {@code ./postbox verify}
 * @param transport {@code kafka} or {@code rabbitmq}
 * @param relay the relay mode's command-line name
 * @param consumerMode the consumer mode's command-line name
 * @param commit {@code git rev-parse HEAD} of the working directory, or {@code unknown}
 * @param dirty whether {@code git status --porcelain} listed changes (or could not tell)
 * @param machine cores, memory and operating system
 * @param cluster whether it ran on a three-broker (three-node) cluster ({@code --cluster})
 */
record RunRecord(
    List<String> command,
    String transport,
    String relay,
    String consumerMode,
    String commit,
    boolean dirty,
    Map<String, Object> machine,
    boolean cluster) {

  /** A record of a run on a single broker. */
  RunRecord(
      List<String> command,
      String transport,
      String relay,
      String consumerMode,
      String commit,
      boolean dirty,
      Map<String, Object> machine) {
    this(command, transport, relay, consumerMode, commit, dirty, machine, false);
  }

  /**
   * This record for a part of the run with its own mode (the redis-window scenario's report): the
   * same command, commit, tree state and machine.
   */
  RunRecord withMode(String transport, String relay, String consumerMode, boolean cluster) {
    return new RunRecord(command, transport, relay, consumerMode, commit, dirty, machine, cluster);
  }

  /** The record of a run started now in this process's working directory. */
  static RunRecord of(
      List<String> command, String transport, String relay, String consumerMode, boolean cluster) {
    String commit = git("rev-parse", "HEAD");
    String status = git("status", "--porcelain", "--untracked-files=no");
    Map<String, Object> machine = new LinkedHashMap<>();
    machine.put("cores", Runtime.getRuntime().availableProcessors());
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      machine.put("memory_bytes", os.getTotalMemorySize());
    }
    machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
    machine.put("java", System.getProperty("java.version"));
    return new RunRecord(
        List.copyOf(command),
        transport.toLowerCase(java.util.Locale.ROOT),
        relay,
        consumerMode,
        commit == null ? "unknown" : commit.strip(),
        status == null || !status.isBlank(),
        machine,
        cluster);
  }

  /** Adds the record's keys to a report's JSON root, with the faults read from {@code faultLog}. */
  void putInto(Map<String, Object> root, Path faultLog) throws IOException {
    root.put("command", command);
    root.put("transport", transport);
    root.put("relay", relay);
    root.put("consumer_mode", consumerMode);
    root.put("cluster", cluster);
    root.put("commit", commit);
    root.put("dirty", dirty);
    root.put("machine", machine);
    root.put("faults", faults(faultLog));
  }

  /**
   * The fault log's lines of faults (fired, not fired, unexpected exits), each as time, scenario,
   * kind, target and outcome; notes and scenario markers are left out. Empty if there is no log.
   */
  static List<Map<String, String>> faults(Path faultLog) throws IOException {
    List<Map<String, String>> faults = new ArrayList<>();
    if (faultLog == null || !Files.exists(faultLog)) {
      return faults;
    }
    for (String line : Files.readAllLines(faultLog, StandardCharsets.UTF_8)) {
      Map<String, String> fault = fault(line);
      if (fault != null) {
        faults.add(fault);
      }
    }
    return faults;
  }

  /** The outcomes of a fault line: the fault happened, did not, or a process exited unasked. */
  private static final List<String> FAULT_OUTCOMES = List.of("fired", "not-fired", "observed");

  /** The outcomes of the fault log's other lines. */
  private static final List<String> OTHER_OUTCOMES = List.of("note", "begin");

  /**
   * One line of the fault log as a fault, or null if it is not one. The format is {@code <instant>
   * <scenario> <kind> <target> <outcome> [detail]} (FaultLog's), where the target may hold spaces
   * ({@code relay-a#16 (pid 25214)}): the outcome is the first word after the kind that is one.
   */
  static Map<String, String> fault(String line) {
    String[] w = line.split(" ");
    for (int i = 4; i < w.length; i++) {
      if (FAULT_OUTCOMES.contains(w[i]) || OTHER_OUTCOMES.contains(w[i])) {
        if (!FAULT_OUTCOMES.contains(w[i])) {
          return null;
        }
        Map<String, String> fault = new LinkedHashMap<>();
        fault.put("time", w[0]);
        fault.put("scenario", w[1]);
        fault.put("kind", w[2]);
        fault.put("target", String.join(" ", java.util.Arrays.copyOfRange(w, 3, i)));
        fault.put("outcome", w[i]);
        return fault;
      }
    }
    return null;
  }

  /** The output of {@code git args} in the working directory, or null if it failed. */
  private static String git(String... args) {
    List<String> command = new ArrayList<>(List.of("git"));
    command.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
        return null;
      }
      return out;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }
}
