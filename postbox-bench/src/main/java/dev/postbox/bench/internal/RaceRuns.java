package dev.postbox.bench.internal;

import dev.postbox.bench.Measurement;
import java.util.Map;

/**
 * The runs of a race between two consumers: each run's rate, when its first record was applied, the
 * rate from then on and the CPU per message by process; the median figures with the runs and their
 * spread. Stateless.
 */
final class RaceRuns {

  private RaceRuns() {}

  /** One timed run: its rate, when its first record was applied and the rate from then on. */
  record Run(double rate, double firstMs, double steadyRate, Map<String, Double> cpuUs) {
    @Override
    public String toString() {
      return String.format(
          "%.0f msgs/s (first record after %.0f ms, %.0f msgs/s from then on; CPU per message"
              + " %s us)",
          rate, firstMs, steadyRate, rounded(cpuUs));
    }
  }

  @FunctionalInterface
  interface TimedRun {
    Run run() throws InterruptedException;
  }

  static Run withCpu(ProcessCpu cpu, int n, TimedRun once) throws InterruptedException {
    Map<String, Double> before = cpu.snapshot();
    Run r = once.run();
    return new Run(
        r.rate(), r.firstMs(), r.steadyRate(), ProcessCpu.perMessageUs(before, cpu.snapshot(), n));
  }

  static Measurement median(
      String name, Run[] runs, java.util.function.ToDoubleFunction<Run> rate, String note) {
    double[] rates = java.util.Arrays.stream(runs).mapToDouble(rate).toArray();
    double[] ms = OpenLoop.medianAndSpread(rates);
    return Measurement.of(name, ms[0], "msgs/s")
        .note(
            String.format(
                "%s; median of %d runs %s (alternating with the other side), spread %.0f%%",
                note,
                runs.length,
                java.util.Arrays.toString(
                    java.util.Arrays.stream(rates).mapToLong(Math::round).toArray()),
                ms[1] * 100));
  }

  /**
   * The median over rounds of {@code ours[i]}'s rate over {@code theirs[i]}'s: each ratio compares
   * two runs made back to back, so a load that drifts between rounds moves both of its sides, where
   * a ratio of the two medians can pair one side's quiet round with the other's busy one.
   */
  static Measurement pairedRatio(String name, Run[] ours, Run[] theirs, String note) {
    if (ours.length != theirs.length || ours.length == 0) {
      throw new IllegalArgumentException(
          "paired runs: " + ours.length + " against " + theirs.length);
    }
    double[] ratios = new double[ours.length];
    for (int i = 0; i < ratios.length; i++) {
      ratios[i] = ours[i].rate() / theirs[i].rate();
    }
    double[] ms = OpenLoop.medianAndSpread(ratios);
    StringBuilder each = new StringBuilder();
    for (double r : ratios) {
      each.append(each.isEmpty() ? "" : ", ")
          .append(String.format(java.util.Locale.ROOT, "%.2f", r));
    }
    return Measurement.of(name, ms[0], "x")
        .note(
            String.format(
                java.util.Locale.ROOT,
                "%s; median of the %d rounds' ratios [%s], spread %.0f%%",
                note,
                ratios.length,
                each,
                ms[1] * 100));
  }

  static Measurement cpuFigure(String name, Run[] runs) {
    Run[] sorted = runs.clone();
    java.util.Arrays.sort(sorted, java.util.Comparator.comparingDouble(Run::rate));
    Run mid = sorted[sorted.length / 2];
    return Measurement.of(name, mid.cpuUs().get("total"), "us")
        .note(
            "CPU per message of this JVM, the broker and PostgreSQL in the median run: "
                + rounded(mid.cpuUs())
                + " us");
  }

  static String loadAverage() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim();
    } catch (java.io.IOException e) {
      return "unknown";
    }
  }

  static String rounded(Map<String, Double> us) {
    StringBuilder b = new StringBuilder();
    us.forEach(
        (k, v) -> b.append(b.isEmpty() ? "" : ", ").append(k).append(' ').append(Math.round(v)));
    return b.toString();
  }
}
