package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.CdcLatencyBench.Phase;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** How the rounds' phases become the report: medians, the worst round, the count within target. */
class CdcLatencyRoundsTest {

  @Test
  void eachP99IsTheMedianOfItsRoundsAndTheWorstRoundIsReportedBesideIt() {
    // the relay at 1k: 9, 300 (a stalled round), 11 -> median 11, worst 300
    List<List<Phase>> relay =
        List.of(
            List.of(phase("1k", 1_000, 9), phase("half_max", 1_500, 50)),
            List.of(phase("1k", 1_000, 300), phase("half_max", 1_500, 12)),
            List.of(phase("1k", 1_000, 11), phase("half_max", 1_500, 14)));
    List<List<Phase>> dbz =
        List.of(
            List.of(phase("1k", 1_000, 40), phase("half_max", 1_500, 30)),
            List.of(phase("1k", 1_000, 20), phase("half_max", 1_500, 35)),
            List.of(phase("1k", 1_000, 60), phase("half_max", 1_500, 33)));

    List<Measurement> out = CdcLatencyRounds.measurements(3_000, relay, dbz);

    assertThat(value(out, "cdc_rounds_latency_1k_p99_ms")).isCloseTo(11, within());
    assertThat(value(out, "cdc_rounds_latency_1k_p99_max_ms")).isCloseTo(300, within());
    assertThat(value(out, "cdc_rounds_debezium_latency_1k_p99_ms")).isCloseTo(40, within());
    assertThat(value(out, "cdc_rounds_latency_1k_p99_vs_debezium")).isCloseTo(11.0 / 40, within());
    assertThat(value(out, "cdc_rounds_latency_half_max_p99_ms")).isCloseTo(14, within());
    // the target (20 ms) is on the fixed rates only: 2 of the 3 rounds at 1k are within it
    assertThat(value(out, "cdc_rounds_latency_phases_within_target")).isEqualTo(2);
    assertThat(measurement(out, "cdc_rounds_latency_1k_p99_ms").target())
        .contains(Target.atMost(20));
    assertThat(measurement(out, "cdc_rounds_latency_half_max_p99_ms").target()).isEmpty();
    assertThat(measurement(out, "cdc_rounds_debezium_latency_1k_p99_ms").target()).isEmpty();
    // every round's p99 is in the note, so the median hides nothing
    assertThat(measurement(out, "cdc_rounds_latency_1k_p99_ms").note())
        .contains("[9.0, 300.0, 11.0]")
        .contains("[2] offered 1,000/s");
    assertThat(value(out, "cdc_rounds_writer_max_tx_per_s")).isEqualTo(3_000);
  }

  @Test
  void roundsOfDifferentShapesAreRefused() {
    List<List<Phase>> one = List.of(List.of(phase("1k", 1_000, 9)));
    assertThatThrownBy(() -> CdcLatencyRounds.measurements(1, one, List.of()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() ->
            CdcLatencyRounds.measurements(
                1, one, List.of(List.of(phase("1k", 1_000, 9), phase("2k", 2_000, 9)))))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    assertThat(CdcLatencyRounds.median(new double[] {5, 1, 3})).isEqualTo(3);
    assertThat(CdcLatencyRounds.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
  }

  /** A phase of 1,000 events whose p99 reads {@code p99} (the top 1 % at it, the rest at 1 ms). */
  private static Phase phase(String key, int rate, double p99) {
    double[] ms = IntStream.range(0, 1_000).mapToDouble(i -> i >= 980 ? p99 : 1).toArray();
    Arrays.sort(ms);
    return new Phase(key, rate, rate, ms, Map.of("total", 100.0), "tail: test");
  }

  private static org.assertj.core.data.Offset<Double> within() {
    return org.assertj.core.data.Offset.offset(1e-9);
  }

  private static double value(List<Measurement> out, String name) {
    return measurement(out, name).value();
  }

  private static Measurement measurement(List<Measurement> out, String name) {
    Optional<Measurement> m = out.stream().filter(x -> x.name().equals(name)).findFirst();
    assertThat(m).as(name).isPresent();
    return m.orElseThrow();
  }
}
