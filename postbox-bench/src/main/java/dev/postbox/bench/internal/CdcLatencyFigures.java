package dev.postbox.bench.internal;

import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The CDC latency race's figures from its measured phases: each streamer's percentiles, rate and
 * CPU per event, and the p99 ratios between streamers at the same rates. Pure functions, apart from
 * {@link CdcLatencyBench}, which runs the phases.
 */
final class CdcLatencyFigures {

  private CdcLatencyFigures() {}

  /**
   * A streamer run without one of its features ({@code variant}, with {@code how} it ran), and the
   * default's p99 over it per rate as {@code <defaultPrefix><rate>_p99_vs_<vs>}: what the feature
   * changes, in the same run; nothing in quick mode (no variant phases).
   */
  static List<Measurement> variantMeasurements(
      String defaultPrefix,
      List<CdcLatencyBench.Phase> defaults,
      String vs,
      String variantPrefix,
      List<CdcLatencyBench.Phase> variant,
      String how) {
    List<Measurement> out = new ArrayList<>();
    for (CdcLatencyBench.Phase p : variant) {
      out.addAll(figures(variantPrefix, p, how, Optional.empty()));
    }
    out.addAll(ratios(defaultPrefix, defaults, vs, variantPrefix, variant));
    return out;
  }

  /** The polling relay's figures, and the CDC relay's p99 over the polling relay's per rate. */
  static List<Measurement> pollingMeasurements(
      List<CdcLatencyBench.Phase> cdc, List<CdcLatencyBench.Phase> polling) {
    String how =
        "polling relay, defaults (NOTIFY wake-up, poll every 1 s when idle, batch 2,000; the same"
            + " Kafka publisher settings as the CDC relay)";
    List<Measurement> out = new ArrayList<>();
    for (CdcLatencyBench.Phase p : polling) {
      Optional<Target> target =
          p.key().equals("1k")
              ? Optional.of(Target.atMost(CdcLatencyBench.MAX_POLLING_P99_MS))
              : Optional.empty();
      out.addAll(figures("cdc_polling_latency_", p, how, target));
    }
    out.addAll(ratios("cdc_latency_", cdc, "polling", "cdc_polling_latency_", polling));
    return out;
  }

  /**
   * Per rate, the p99 of {@code ours} over the p99 of {@code others} (the same rates, in the same
   * order), as {@code <ourPrefix><rate>_p99_vs_<vs>}; none where {@code others} is empty.
   */
  static List<Measurement> ratios(
      String ourPrefix,
      List<CdcLatencyBench.Phase> ours,
      String vs,
      String otherPrefix,
      List<CdcLatencyBench.Phase> others) {
    List<Measurement> out = new ArrayList<>();
    for (int i = 0; i < Math.min(ours.size(), others.size()); i++) {
      out.add(ratio(ourPrefix + ours.get(i).key(), ours.get(i), vs, otherPrefix, others.get(i)));
    }
    return out;
  }

  /** {@code name}'s p99 over {@code other}'s, as {@code <name>_p99_vs_<vs>}. */
  static Measurement ratio(
      String name,
      CdcLatencyBench.Phase ours,
      String vs,
      String otherPrefix,
      CdcLatencyBench.Phase other) {
    return Measurement.of(
            name + "_p99_vs_" + vs, ours.percentile(99) / Math.max(other.percentile(99), 1e-9), "x")
        .note(name + "_p99_ms / " + otherPrefix + other.key() + "_p99_ms (lower is better)");
  }

  static List<Measurement> figures(
      String prefix, CdcLatencyBench.Phase p, String how, Optional<Target> target) {
    String k = prefix + p.key();
    String note =
        String.format(
            Locale.ROOT,
            "%s; offered %,d/s, achieved %,.0f tx/s%s, %,d events; commit (writer's wall clock"
                + " after commit()) to the broker's append stamp (LogAppendTime, ms); CPU per"
                + " event, us: %s; tail: %s",
            how,
            p.offered(),
            p.achieved(),
            p.sustained() ? "" : " (NOT sustained: the writers fell behind, a queue is measured)",
            p.sortedMs().length,
            cpuNote(p.cpuUs()),
            p.stalls());
    Measurement p99 = Measurement.of(k + "_p99_ms", p.percentile(99), "ms").note(note);
    return List.of(
        Measurement.of(k + "_p50_ms", p.percentile(50), "ms").note(note),
        target.map(p99::target).orElse(p99),
        Measurement.of(k + "_p999_ms", p.percentile(99.9), "ms").note(note),
        Measurement.of(k + "_achieved_per_s", p.achieved(), "tx/s").note(note),
        Measurement.of(k + "_cpu_us_per_event", p.cpuUs().getOrDefault("total", 0.0), "us")
            .note(note));
  }

  /** "123 (broker 30, jvm 50, postgres 43)". */
  static String cpuNote(Map<String, Double> us) {
    StringBuilder b =
        new StringBuilder(String.format(Locale.ROOT, "%.0f (", us.getOrDefault("total", 0.0)));
    us.forEach((kind, v) -> {
      if (!kind.equals("total")) {
        b.append(String.format(Locale.ROOT, "%s %.0f, ", kind, v));
      }
    });
    b.setLength(b.length() - 2);
    return b.append(')').toString();
  }
}
