package dev.postbox.bench.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * CPU time used so far by the processes of a benchmark, by kind: {@code jvm} (this one), {@code
 * broker} (this JVM's child processes but PostgreSQL: the test kit's Kafka broker) and {@code
 * postgres} (the server behind a data source: its postmaster, found through its {@code
 * postmaster.pid}, and every backend and worker under it, which {@link OpenLoop#cpuMsByProcess()}
 * misses because the test kit's server runs detached). Other sessions' servers on the machine are
 * not counted.
 *
 * <p>A process that ends during a run (a pool closing its connections ends their backends; the
 * race's pools are closed at the end of each run) keeps its share: on Linux the kernel adds an
 * ended child's CPU to its parent's {@code cutime}/{@code cstime} once the parent has waited for
 * it, and the postmaster waits for every backend (and this JVM for its child processes). So each
 * kind is a parent's own CPU, its ended children's and its live descendants', a total that only
 * grows: without the ended children, a run whose backends ended before the second snapshot counted
 * none of their work, and one whose earlier backends ended in between read below zero (-14 us per
 * message, seen in CI).
 */
final class ProcessCpu {

  private final Optional<ProcessHandle> postmaster;

  private ProcessCpu(Optional<ProcessHandle> postmaster) {
    this.postmaster = postmaster;
  }

  /** The processes of this JVM and of the PostgreSQL server behind {@code ds}. */
  static ProcessCpu of(DataSource ds) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW data_directory")) {
      rs.next();
      String first = Files.readAllLines(Path.of(rs.getString(1), "postmaster.pid")).get(0);
      return new ProcessCpu(ProcessHandle.of(Long.parseLong(first.trim())));
    } catch (SQLException | java.io.IOException | RuntimeException e) {
      return new ProcessCpu(Optional.empty()); // an external server: not counted
    }
  }

  /** This JVM and its child processes only (no PostgreSQL server). */
  static ProcessCpu ofThisJvm() {
    return new ProcessCpu(Optional.empty());
  }

  /** Milliseconds of CPU so far by kind ({@code jvm}, {@code broker}, {@code postgres}). */
  Map<String, Double> snapshot() {
    Map<String, Double> by = new TreeMap<>();
    ProcessHandle self = ProcessHandle.current();
    by.put("jvm", ms(self));
    by.put("broker", endedChildrenMs(self.pid()));
    self.descendants()
        .filter(p -> !p.info().command().orElse("").contains("postgres"))
        .forEach(p -> by.merge("broker", ms(p), Double::sum));
    by.put("postgres", 0.0);
    postmaster.ifPresent(pm -> {
      by.merge("postgres", ms(pm) + endedChildrenMs(pm.pid()), Double::sum);
      pm.descendants().forEach(p -> by.merge("postgres", ms(p), Double::sum));
    });
    return by;
  }

  /** Microseconds of CPU per message by kind between two snapshots, and their total. */
  static Map<String, Double> perMessageUs(
      Map<String, Double> before, Map<String, Double> after, long n) {
    Map<String, Double> us = new TreeMap<>();
    double total = 0;
    for (Map.Entry<String, Double> e : after.entrySet()) {
      double v = (e.getValue() - before.getOrDefault(e.getKey(), 0.0)) * 1000 / Math.max(1, n);
      us.put(e.getKey(), v);
      total += v;
    }
    us.put("total", total);
    return us;
  }

  /**
   * CPU milliseconds of the ended (waited-for) children of {@code pid}: {@code cutime + cstime} of
   * {@code /proc/<pid>/stat} in clock ticks ({@code USER_HZ}, 100 on Linux); 0 where unreadable.
   */
  static double endedChildrenMs(long pid) {
    try {
      return endedChildrenMs(Files.readString(Path.of("/proc", Long.toString(pid), "stat")));
    } catch (java.io.IOException | RuntimeException e) {
      return 0;
    }
  }

  /** {@link #endedChildrenMs(long)} from the text of a {@code stat} file. */
  static double endedChildrenMs(String stat) {
    // the command name (field 2) is in parentheses and may hold spaces: count fields after it
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    // f[0] is field 3 (state); cutime and cstime are fields 16 and 17
    return (Long.parseLong(f[13]) + Long.parseLong(f[14])) * 1000.0 / USER_HZ;
  }

  private static final double USER_HZ = 100;

  private static double ms(ProcessHandle p) {
    return p.info().totalCpuDuration().map(d -> d.toNanos() / 1e6).orElse(0.0);
  }
}
