package dev.postbox.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.bench.internal.Repeated;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * Compares a run's relay figures with the committed previous report: each figure's ratio to its
 * baseline in the same run (the drain ceiling), against the same ratio in that report, so the
 * machine's speed cancels out. A figure regressed when its ratio dropped by more than this run's
 * spread of the figure plus that of its baseline (a ratio of two medians moves with both), and at
 * least {@link #MIN_TOLERANCE}: the previous report's own spread is not known. Only full-mode runs
 * are compared (a quick run measures each figure once, so it has no spread). Immutable.
 *
 * @param previousPath where the previous report was read from (for the messages)
 * @param previous the previous report's JSON
 */
record RelayRegressionCheck(Path previousPath, JsonNode previous) {

  /** The figures checked, each against its baseline in the same run. */
  static final List<String> FIGURES =
      List.of("relay_1_instance_events_per_s", "relay_2_instances_events_per_s");

  /** The smallest drop that counts as a regression, whatever the spreads. */
  static final double MIN_TOLERANCE = 0.05;

  /** The exit code of a run with a regressed relay figure. */
  static final int EXIT_REGRESSED = 3;

  /** One figure compared: its ratio now and before, the drop and the drop allowed. */
  record Finding(
      String figure,
      String baselineName,
      double ratio,
      double previousRatio,
      double allowed,
      String previousDate) {

    /** The relative drop of the ratio (negative when it rose). */
    double drop() {
      return 1 - ratio / previousRatio;
    }

    boolean regressed() {
      return drop() > allowed;
    }

    String line(Path previousPath) {
      return String.format(
          "relay check: %s %.3fx %s against %.3fx in %s (%s): %+.0f%%, allowed -%.0f%%: %s",
          figure,
          ratio,
          baselineName,
          previousRatio,
          previousPath,
          previousDate,
          -drop() * 100,
          allowed * 100,
          regressed() ? "REGRESSED" : "ok");
    }
  }

  /** The previous report at {@code path}, if it exists. */
  static Optional<RelayRegressionCheck> read(Path path) throws IOException {
    if (!Files.isRegularFile(path)) {
      return Optional.empty();
    }
    return Optional.of(new RelayRegressionCheck(path, new ObjectMapper().readTree(path.toFile())));
  }

  /**
   * The relay figures of {@code now} compared; empty when there is nothing to compare (a quick run,
   * a quick previous report, or no relay figures in either).
   */
  List<Finding> compare(BenchReport now) {
    List<Finding> out = new ArrayList<>();
    if (now.quick() || previous.path("quick").asBoolean(false)) {
      return out;
    }
    for (String figure : FIGURES) {
      Optional<Measurement> m = now.get(figure);
      JsonNode before = previous.path(figure);
      if (m.isEmpty() || m.get().ratio().isEmpty() || !before.path("ratio").isNumber()) {
        continue;
      }
      String baselineName = m.get().baselineName().orElseThrow();
      if (!baselineName.equals(before.path("baseline_name").asText())) {
        continue; // measured against another baseline then: not comparable
      }
      OptionalDouble figureSpread = Repeated.spread(m.get().note());
      OptionalDouble baselineSpread =
          now.get(baselineName).map(b -> Repeated.spread(b.note())).orElse(OptionalDouble.empty());
      double allowed = Math.max(MIN_TOLERANCE, figureSpread.orElse(0) + baselineSpread.orElse(0));
      out.add(
          new Finding(
              figure,
              baselineName,
              m.get().ratio().getAsDouble(),
              before.path("ratio").asDouble(),
              allowed,
              previous.path("date").asText("?")));
    }
    return out;
  }
}
