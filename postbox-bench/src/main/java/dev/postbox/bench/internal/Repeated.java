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

  // How a note states the spread of its runs; read back by spread(String).
  private static final java.util.regex.Pattern SPREAD =
      java.util.regex.Pattern.compile("warm runs \\[[^]]*], spread (\\d+)%");

  private Repeated() {}

  /**
   * The spread ({@code (max - min) / median}, as a fraction) that a note written here states, if it
   * states one (a figure of several runs; not a single run's).
   */
  public static java.util.OptionalDouble spread(String note) {
    java.util.regex.Matcher m = SPREAD.matcher(note);
    return m.find()
        ? java.util.OptionalDouble.of(Integer.parseInt(m.group(1)) / 100.0)
        : java.util.OptionalDouble.empty();
  }

  /**
   * Like {@link #median} for several figures whose runs take turns (a warm-up of each, then round 1
   * of each, round 2 of each, ...), so that a load that drifts during the run (other processes on a
   * shared machine) weighs on every figure alike instead of on whichever was measured last.
   */
  public static java.util.List<Measurement> interleaved(
      java.util.List<String> names, String unit, int runs, java.util.List<Once> onces)
      throws Exception {
    if (runs < 1 || names.size() != onces.size()) {
      throw new IllegalArgumentException(runs + " runs, " + names + " for " + onces.size());
    }
    for (Once once : onces) {
      once.run(0);
    }
    double[][] rates = new double[onces.size()][runs];
    String[] notes = new String[onces.size()];
    for (int i = 0; i < runs; i++) {
      for (int f = 0; f < onces.size(); f++) {
        Run r = onces.get(f).run(i + 1);
        rates[f][i] = r.rate();
        notes[f] = r.note();
      }
    }
    java.util.List<Measurement> out = new java.util.ArrayList<>();
    for (int f = 0; f < onces.size(); f++) {
      int figure = f;
      out.add(
          median(
                  names.get(f),
                  unit,
                  runs,
                  round -> new Run(rates[figure][round - 1], notes[figure]),
                  false)
              .note(summary(notes[f], rates[f]) + ", runs interleaved with " + others(names, f)));
    }
    return out;
  }

  private static String others(java.util.List<String> names, int f) {
    java.util.List<String> o = new java.util.ArrayList<>(names);
    o.remove(f);
    return String.join(", ", o);
  }

  private static Measurement median(String name, String unit, int runs, Once once, boolean warmUp)
      throws Exception {
    if (warmUp) {
      once.run(0);
    }
    double[] rates = new double[runs];
    for (int i = 0; i < runs; i++) {
      rates[i] = once.run(i + 1).rate();
    }
    double[] sorted = rates.clone();
    Arrays.sort(sorted);
    return Measurement.of(name, sorted[runs / 2], unit);
  }

  private static String summary(String note, double[] rates) {
    int runs = rates.length;
    double[] sorted = rates.clone();
    Arrays.sort(sorted);
    double median = sorted[runs / 2];
    double spread = median == 0 ? 0 : (sorted[runs - 1] - sorted[0]) / median;
    long[] rounded = Arrays.stream(rates).mapToLong(Math::round).toArray();
    return String.format(
        "%s; median of %d warm runs %s, spread %.0f%%",
        note, runs, Arrays.toString(rounded), spread * 100);
  }

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
