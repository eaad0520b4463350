package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.List;
import org.junit.jupiter.api.Test;

class RelayRegressionCheckTest {

  private static final Path PREVIOUS = Path.of("docs/benchmarks-full.json");

  private static RelayRegressionCheck previous(boolean quick) throws Exception {
    String json =
        """
        {"date": "2026-12-01", "quick": %s,
         "drain_ceiling_events_per_s": {"value": 182313.0, "ratio": null},
         "relay_1_instance_events_per_s": {"value": 77902.0, "baseline": 182313.0,
           "baseline_name": "drain_ceiling_events_per_s", "ratio": 0.427},
         "relay_2_instances_events_per_s": {"value": 98520.0, "baseline": 182313.0,
           "baseline_name": "drain_ceiling_events_per_s", "ratio": 0.54}}
        """
            .formatted(quick);
    return new RelayRegressionCheck(PREVIOUS, new ObjectMapper().readTree(json));
  }

  private static Measurement repeated(String name, double value, String spread) {
    return Measurement.of(name, value, "events/s")
        .note("drained; median of 3 warm runs [1, 2, 3], spread " + spread);
  }

  private static BenchReport run(boolean quick, double one, double two, String spread) {
    Measurement ceiling = repeated("drain_ceiling_events_per_s", 100_000, "4%");
    return new BenchReport(
        LocalDate.of(2026, 12, 4),
        2,
        8,
        quick,
        List.of(
            ceiling,
            repeated("relay_1_instance_events_per_s", one, spread).against(ceiling),
            repeated("relay_2_instances_events_per_s", two, spread).against(ceiling)));
  }

  @Test
  void aRatioThatDroppedByMoreThanTheSpreadsOfTheFigureAndItsBaselineRegressed() throws Exception {
    // relay 1: 0.42 against 0.427 (-1.6%); relay 2: 0.16 against 0.54 (-70%); allowed 6% + 4%
    List<RelayRegressionCheck.Finding> found =
        previous(false).compare(run(false, 42_000, 16_000, "6%"));

    assertThat(found).hasSize(2);
    assertThat(found.get(0).regressed()).isFalse();
    assertThat(found.get(1).regressed()).isTrue();
    assertThat(found.get(1).allowed())
        .isEqualTo(0.10, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(found.get(1).line(PREVIOUS))
        .isEqualTo(
            "relay check: relay_2_instances_events_per_s 0.160x drain_ceiling_events_per_s"
                + " against 0.540x in docs/benchmarks-full.json (2026-12-01): -70%, allowed -10%:"
                + " REGRESSED");
  }

  @Test
  void aDropWithinTheSpreadPassesAndTheToleranceIsAtLeastFivePercent() throws Exception {
    List<RelayRegressionCheck.Finding> wide =
        previous(false).compare(run(false, 38_000, 50_000, "20%")); // -11%, -7%: within 24%
    assertThat(wide).noneMatch(RelayRegressionCheck.Finding::regressed);

    List<RelayRegressionCheck.Finding> narrow =
        previous(false).compare(run(false, 41_000, 50_000, "0%")); // -4%: within the 5% floor
    assertThat(narrow.get(0).allowed())
        .isEqualTo(0.05, org.assertj.core.api.Assertions.within(1e-9));
    assertThat(narrow.get(0).regressed()).isFalse();
  }

  @Test
  void quickRunsAndQuickReportsAreNotCompared() throws Exception {
    assertThat(previous(false).compare(run(true, 1_000, 1_000, "0%"))).isEmpty();
    assertThat(previous(true).compare(run(false, 1_000, 1_000, "0%"))).isEmpty();
  }

  @Test
  void theCommittedReportReadsAndItsRelayFiguresAreComparable() throws Exception {
    RelayRegressionCheck committed =
        RelayRegressionCheck.read(Path.of("..").resolve(PREVIOUS)).orElseThrow();
    assertThat(committed.compare(run(false, 42_700, 54_000, "5%")))
        .extracting(RelayRegressionCheck.Finding::figure)
        .containsExactlyElementsOf(RelayRegressionCheck.FIGURES);
  }
}
