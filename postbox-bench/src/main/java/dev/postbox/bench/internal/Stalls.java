package dev.postbox.bench.internal;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * Where a latency phase's tail comes from: the windows in which events waited longer than a
 * threshold (events committed within {@link #GAP_MS} of each other belong to one window, so one
 * stall of the machine counts once however many events it held up), the worst event's wall-clock
 * time (to line up with a GC log or the server's log), and what else ran in the phase: this JVM's
 * garbage-collection pauses (the writers and the relay live here) and PostgreSQL's checkpoints.
 * With a 10 s phase at 1,000 events/s, a p99 is decided by a single stall of 100 events, so a p99
 * beside "1 window" reads as one stall, not a slow relay.
 */
final class Stalls {

  /** Events committed within this many ms of each other are one window. */
  static final long GAP_MS = 100;

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss.SSS", Locale.ROOT).withZone(ZoneOffset.UTC);

  private final DataSource dataSource;
  private final long gcCount;
  private final long gcMillis;
  private final long checkpoints;
  private final long[] machine;

  private Stalls(DataSource dataSource) {
    this.dataSource = dataSource;
    long[] gc = gc();
    this.gcCount = gc[0];
    this.gcMillis = gc[1];
    this.checkpoints = checkpoints(dataSource);
    this.machine = machine();
  }

  /** Starts counting GC pauses and checkpoints now. */
  static Stalls start(DataSource dataSource) {
    return new Stalls(dataSource);
  }

  /**
   * "2 windows past 20 ms (worst 118.2 ms at 15:56:45.123 UTC); this JVM's GC: 14 pauses, 96 ms;
   * checkpoints: 0". {@code commitMicros} and {@code latencyMs} are per event, in the same order.
   */
  String summary(long[] commitMicros, double[] latencyMs, double thresholdMs) {
    long[] gc = gc();
    long cp = checkpoints(dataSource);
    long[] m = machine();
    int windows = windows(commitMicros, latencyMs, thresholdMs);
    int worst = -1;
    for (int i = 0; i < latencyMs.length; i++) {
      if (worst < 0 || latencyMs[i] > latencyMs[worst]) {
        worst = i;
      }
    }
    String worstAt =
        worst < 0
            ? "no events"
            : String.format(
                Locale.ROOT,
                "worst %.1f ms, committed at %s UTC",
                latencyMs[worst],
                TIME.format(Instant.EPOCH.plusNanos(commitMicros[worst] * 1000)));
    return String.format(
        Locale.ROOT,
        "%d window%s past %.0f ms (%s); this JVM's GC: %d pauses, %d ms; checkpoints: %s;"
            + " the machine's stall time, ms: %s",
        windows,
        windows == 1 ? "" : "s",
        thresholdMs,
        worstAt,
        gc[0] - gcCount,
        gc[1] - gcMillis,
        cp < 0 || checkpoints < 0 ? "unknown" : Long.toString(cp - checkpoints),
        machineNote(machine, m));
  }

  /**
   * The windows of events slower than {@code thresholdMs}: slow events committed within {@link
   * #GAP_MS} of the previous slow one (in commit order) are one window.
   */
  static int windows(long[] commitMicros, double[] latencyMs, double thresholdMs) {
    Integer[] order = new Integer[commitMicros.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(commitMicros[a], commitMicros[b]));
    int windows = 0;
    long lastSlowMicros = Long.MIN_VALUE;
    for (int i : order) {
      if (latencyMs[i] > thresholdMs) {
        if (lastSlowMicros == Long.MIN_VALUE || commitMicros[i] - lastSlowMicros > GAP_MS * 1000) {
          windows++;
        }
        lastSlowMicros = commitMicros[i];
      }
    }
    return windows;
  }

  private static final String[] MACHINE = {"cpu some", "io some", "io full", "steal"};

  /**
   * The kernel's pressure stall totals (µs: some task waiting for a CPU, for I/O, every task
   * waiting for I/O; Linux 4.20+, {@code /proc/pressure}) and the CPU time the hypervisor took
   * ({@code steal} in {@code /proc/stat}, in ticks of 10 ms); -1 where unreadable.
   */
  private static long[] machine() {
    long[] out = {-1, -1, -1, -1};
    try {
      for (String line : Files.readAllLines(Path.of("/proc/pressure/cpu"))) {
        if (line.startsWith("some ")) {
          out[0] = total(line);
        }
      }
      for (String line : Files.readAllLines(Path.of("/proc/pressure/io"))) {
        if (line.startsWith("some ")) {
          out[1] = total(line);
        } else if (line.startsWith("full ")) {
          out[2] = total(line);
        }
      }
    } catch (IOException | RuntimeException e) {
      // no pressure stall information on this kernel
    }
    try {
      String cpu = Files.readAllLines(Path.of("/proc/stat")).get(0);
      String[] f = cpu.trim().split("\\s+");
      out[3] = f.length > 8 ? Long.parseLong(f[8]) * 10_000 : -1; // ticks of 10 ms, as µs
    } catch (IOException | RuntimeException e) {
      // not Linux
    }
    return out;
  }

  private static long total(String psiLine) {
    int at = psiLine.indexOf("total=");
    return Long.parseLong(psiLine.substring(at + 6).trim());
  }

  /** "cpu some 812, io some 30, io full 12, steal 0" (ms over the phase; "?" where unreadable). */
  private static String machineNote(long[] before, long[] after) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < MACHINE.length; i++) {
      if (i > 0) {
        b.append(", ");
      }
      b.append(MACHINE[i]).append(' ');
      b.append(before[i] < 0 || after[i] < 0 ? "?" : Long.toString((after[i] - before[i]) / 1000));
    }
    return b.toString();
  }

  /** Collections and their total time, ms, of the collectors that pause (not G1's concurrent). */
  private static long[] gc() {
    long count = 0;
    long millis = 0;
    for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (b.getName().contains("Concurrent") || b.getCollectionCount() < 0) {
        continue;
      }
      count += b.getCollectionCount();
      millis += Math.max(0, b.getCollectionTime());
    }
    return new long[] {count, millis};
  }

  /** Checkpoints so far (timed and requested), or -1 where the statistics view cannot be read. */
  private static long checkpoints(DataSource ds) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      // PostgreSQL 17 moved the counters from pg_stat_bgwriter to pg_stat_checkpointer
      String sql =
          c.getMetaData().getDatabaseMajorVersion() >= 17
              ? "SELECT num_timed + num_requested FROM pg_stat_checkpointer"
              : "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter";
      try (ResultSet rs = s.executeQuery(sql)) {
        return rs.next() ? rs.getLong(1) : -1;
      }
    } catch (SQLException e) {
      return -1;
    }
  }
}
