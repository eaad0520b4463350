package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Runs the opt-in {@code ackrounds} group in quick mode: the CDC relay and Debezium in three
 * alternating rounds. Checks that every figure is present and finite, that each p99's note lists
 * three rounds, that the progress log shows the alternation and that the rounds fit PostgreSQL's
 * default {@code max_connections}; never asserts on performance.
 */
class AckRoundsQuickIT {

  private static final List<String> RATES = List.of("1k", "2k", "5k", "half_max", "quarter_max");

  @Test
  void theRoundsReportEveryStreamerAtEveryRate() throws Exception {
    ByteArrayOutputStream progress = new ByteArrayOutputStream();
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(progress, true, StandardCharsets.UTF_8),
                Set.of("ackrounds"))
            .run();

    List<String> expected = new ArrayList<>(List.of("cdc_rounds_writer_max_tx_per_s"));
    for (String r : RATES) {
      for (String s : List.of("cdc_rounds_latency_", "cdc_rounds_debezium_latency_")) {
        for (String f : List.of("p50_ms", "p99_ms", "p99_max_ms")) {
          expected.add(s + r + "_" + f);
        }
      }
      expected.add("cdc_rounds_latency_" + r + "_p99_vs_debezium");
    }
    expected.add("cdc_rounds_latency_phases_within_target");
    expected.add("cdc_rounds_server_connections");
    assertThat(report.measurements())
        .extracting(Measurement::name)
        .containsExactlyInAnyOrderElementsOf(expected);
    for (Measurement m : report.measurements()) {
      assertThat(Double.isFinite(m.value())).as(m.name()).isTrue();
      if (m.name().endsWith("_p99_ms")) {
        assertThat(m.note()).as(m.name()).contains("[1] offered", "[2] offered", "[3] offered");
        assertThat(m.value()).as(m.name()).isLessThanOrEqualTo(max(report, m.name()));
      }
    }
    assertThat(value(report, "cdc_rounds_latency_phases_within_target")).isBetween(0.0, 9.0);
    assertThat(value(report, "cdc_rounds_server_connections"))
        .as("fits PostgreSQL's default max_connections (100): no round's pool outlives it")
        .isBetween(1.0, 99.0);
    String log = progress.toString(StandardCharsets.UTF_8);
    assertThat(log)
        .containsSubsequence(
            "round 1, CDC relay",
            "round 1, Debezium",
            "round 2, Debezium",
            "round 2, CDC relay",
            "round 3, CDC relay",
            "round 3, Debezium");
  }

  /** The worst round's p99 beside a median p99. */
  private static double max(BenchReport report, String p99Name) {
    return value(report, p99Name.replace("_p99_ms", "_p99_max_ms"));
  }

  private static double value(BenchReport report, String name) {
    return report.measurements().stream()
        .filter(m -> m.name().equals(name))
        .findFirst()
        .orElseThrow()
        .value();
  }
}
