package dev.postbox.bench.internal;

import dev.postbox.bench.Measurement;
import java.util.Arrays;

/**
 * A figure measured several times within one run: a warm-up run (not counted), then the median of
 * the runs, with every run and the spread ({@code (max - min) / median}) in the note. A baseline
 * measured once can move 2x between runs (the raw producer read 55,641 and 120,948 events/s in two
 * runs on a quiet machine), so a ratio is only as good as the repeated baseline under it.
 */
public final class Repeated {

  /** One run's rate and what it measured. */
  public record Run(double rate, String note) {}

  /** One run of the measurement; {@code round} 0 is the warm-up. */
  @FunctionalInterface
  public interface Once {
    Run run(int round) throws Exception;
  }

  private Repeated() {}

  /** A warm-up run, then the median of {@code runs} runs (at least 1), with their spread. */
  public static Measurement median(String name, String unit, int runs, Once once) throws Exception {
    if (runs < 1) {
      throw new IllegalArgumentException("runs must be at least 1: " + runs);
    }
    once.run(0);
    double[] rates = new double[runs];
    String note = "";
    for (int i = 0; i < runs; i++) {
      Run r = once.run(i + 1);
      rates[i] = r.rate();
      note = r.note();
    }
    double[] sorted = rates.clone();
    Arrays.sort(sorted);
    double median = sorted[runs / 2];
    double spread = median == 0 ? 0 : (sorted[runs - 1] - sorted[0]) / median;
    long[] rounded = Arrays.stream(rates).mapToLong(Math::round).toArray();
    return Measurement.of(name, median, unit)
        .note(
            runs == 1
                ? String.format("%s; one run after a warm-up run", note)
                : String.format(
                    "%s; median of %d warm runs %s, spread %.0f%%",
                    note, runs, Arrays.toString(rounded), spread * 100));
  }
}
