package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.E2eFigures.Latencies;
import dev.postbox.bench.internal.E2eFigures.Phase;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** How the race's rounds become the report: keys, medians, the worst round, targets, ratios. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class E2eReportTest {

  @Test
  void eachFigureIsTheMedianOfItsRoundsWithTheWorstRoundBesideIt() {
    Map<String, List<List<Phase>>> rounds = new LinkedHashMap<>();
    rounds.put(
        "cdc",
        List.of(
            List.of(phase("1k", 1_000, 10), phase("half_max", 1_500, 20)),
            List.of(phase("1k", 1_000, 300), phase("half_max", 1_500, 22)),
            List.of(phase("1k", 1_000, 12), phase("half_max", 1_500, 24))));
    rounds.put(
        "debezium_spring",
        List.of(
            List.of(phase("1k", 1_000, 40), phase("half_max", 1_500, 44)),
            List.of(phase("1k", 1_000, 48), phase("half_max", 1_500, 40)),
            List.of(phase("1k", 1_000, 60), phase("half_max", 1_500, 50))));

    List<Measurement> out = E2eReport.measurements(3_000, Map.of("cdc", "ours"), rounds);

    assertThat(value(out, "e2e_writers_max_per_s")).isEqualTo(3_000);
    assertThat(value(out, "e2e_cdc_1k_p99_ms")).isCloseTo(12, within(1e-9));
    assertThat(value(out, "e2e_cdc_1k_p99_max_ms")).isCloseTo(300, within(1e-9));
    assertThat(value(out, "e2e_debezium_spring_1k_p99_ms")).isCloseTo(48, within(1e-9));
    assertThat(value(out, "e2e_cdc_vs_debezium_spring_1k_p99")).isCloseTo(12.0 / 48, within(1e-9));
    assertThat(value(out, "e2e_cdc_half_max_p99_ms")).isCloseTo(22, within(1e-9));
    assertThat(value(out, "e2e_cdc_1k_achieved_per_s")).isEqualTo(1_000);
    // every event of a phase: ack 1/4, poll 1/4, apply 1/2 of the total
    assertThat(value(out, "e2e_cdc_1k_hop_ack_p99_ms")).isCloseTo(3, within(1e-9));
    assertThat(value(out, "e2e_cdc_1k_hop_apply_p50_ms")).isCloseTo(6, within(1e-9));
    assertThat(value(out, "e2e_cdc_1k_hop_apply_tail_share_pct")).isCloseTo(50, within(1e-9));
    assertThat(value(out, "e2e_cdc_1k_cpu_us_per_event")).isEqualTo(30);
    assertThat(value(out, "e2e_cdc_1k_cpu_postgres_us_per_event")).isEqualTo(10);
  }

  @Test
  void theIssuesTargetsSitOnTheirFigures() {
    Map<String, List<List<Phase>>> rounds = new LinkedHashMap<>();
    rounds.put("cdc", List.of(List.of(phase("1k", 1_000, 10), phase("half_max", 900, 30))));
    rounds.put("polling", List.of(List.of(phase("1k", 1_000, 80), phase("half_max", 900, 90))));
    rounds.put(
        "debezium_spring", List.of(List.of(phase("1k", 1_000, 40), phase("half_max", 900, 50))));

    List<Measurement> out = E2eReport.measurements(1_800, Map.of(), rounds);

    assertThat(target(out, "e2e_cdc_1k_p99_ms")).contains(Target.atMost(25));
    assertThat(target(out, "e2e_cdc_half_max_p99_ms")).contains(Target.atMost(50));
    assertThat(target(out, "e2e_polling_1k_p99_ms")).contains(Target.atMost(100));
    assertThat(target(out, "e2e_polling_half_max_p99_ms")).isEmpty();
    assertThat(target(out, "e2e_debezium_spring_1k_p99_ms")).isEmpty();
    assertThat(target(out, "e2e_cdc_vs_debezium_spring_1k_p99")).contains(Target.atMost(0.5));
    assertThat(measurement(out, "e2e_cdc_vs_debezium_spring_1k_p99").met()).contains(true);
    assertThat(measurement(out, "e2e_polling_vs_debezium_spring_1k_p99").note())
        .contains("baseline: the peer pipeline");
  }

  @Test
  void theRabbitPipelineIsSetAgainstItsPeerOnRabbitAndHasNoHopItDidNotMeasure() {
    Map<String, List<List<Phase>>> rounds = new LinkedHashMap<>();
    rounds.put("polling", List.of(List.of(phase("1k", 1_000, 20))));
    rounds.put("debezium_spring", List.of(List.of(phase("1k", 1_000, 40))));
    rounds.put("rabbit_polling", List.of(List.of(withoutReceipt(phase("1k", 1_000, 10)))));
    rounds.put("rabbit_spring", List.of(List.of(phase("1k", 1_000, 50))));

    List<Measurement> out =
        E2eReport.measurements(
            2_000, Map.of(), Map.of("rabbit_spring", List.of("a", "b", "c")), rounds);

    assertThat(value(out, "e2e_rabbit_polling_vs_rabbit_spring_1k_p99"))
        .isCloseTo(10.0 / 50, within(1e-9));
    assertThat(measurement(out, "e2e_rabbit_polling_vs_rabbit_spring_1k_p99").note())
        .contains("Spring AMQP");
    assertThat(value(out, "e2e_polling_vs_debezium_spring_1k_p99")).isCloseTo(0.5, within(1e-9));
    assertThat(out)
        .extracting(Measurement::name)
        .doesNotContain(
            "e2e_rabbit_polling_vs_debezium_spring_1k_p99",
            "e2e_rabbit_spring_vs_debezium_spring_1k_p99",
            "e2e_rabbit_polling_1k_hop_poll_p99_ms",
            "e2e_rabbit_polling_1k_hop_apply_tail_share_pct")
        .contains("e2e_rabbit_spring_1k_hop_poll_p99_ms");
    assertThat(value(out, "e2e_rabbit_polling_1k_hop_ack_p99_ms")).isCloseTo(2.5, within(1e-9));
    assertThat(value(out, "e2e_rabbit_polling_1k_hop_ack_tail_share_pct"))
        .as("of the total when the other hops are not measured")
        .isCloseTo(25, within(1e-9));
    assertThat(measurement(out, "e2e_rabbit_spring_1k_hop_poll_p99_ms").note()).isEqualTo("b");
  }

  @Test
  void everyRoundNeedsTheSameRates() {
    Map<String, List<List<Phase>>> rounds = new LinkedHashMap<>();
    rounds.put("cdc", List.of(List.of(phase("1k", 1_000, 10))));
    rounds.put("debezium_spring", List.of(List.of(phase("2k", 2_000, 10))));

    assertThatThrownBy(() -> E2eReport.measurements(1_000, Map.of(), rounds))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("same rates");
  }

  /** A phase whose 100 events all take {@code totalMs}: ack 1/4, poll 1/4, apply 1/2. */
  private static Phase phase(String key, int rate, double totalMs) {
    int n = 100;
    double[] total = new double[n];
    double[] ack = new double[n];
    double[] poll = new double[n];
    double[] apply = new double[n];
    java.util.Arrays.fill(total, totalMs);
    java.util.Arrays.fill(ack, totalMs / 4);
    java.util.Arrays.fill(poll, totalMs / 4);
    java.util.Arrays.fill(apply, totalMs / 2);
    return new Phase(
        key,
        rate,
        rate,
        new Latencies(total, ack, poll, apply),
        Map.of("jvm", 15.0, "broker", 5.0, "postgres", 10.0, "total", 30.0));
  }

  private static Phase withoutReceipt(Phase p) {
    Latencies l = p.latencies();
    return new Phase(
        p.key(),
        p.offered(),
        p.achieved(),
        new Latencies(l.totalMs(), l.ackMs(), null, null),
        p.cpuUs());
  }

  private static Optional<Target> target(List<Measurement> out, String name) {
    return measurement(out, name).target();
  }

  private static double value(List<Measurement> out, String name) {
    return measurement(out, name).value();
  }

  private static Measurement measurement(List<Measurement> out, String name) {
    return out.stream()
        .filter(m -> m.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + name + " in " + out));
  }
}
