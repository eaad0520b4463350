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
 * Runs the opt-in {@code acklatency} group in quick mode: the commit to broker-ack race of the CDC
 * relay, Debezium and the polling relay. Checks that every streamer's figures are present, finite
 * and positive at every rate, with the CPU per event and the CPU while idle; never asserts on
 * performance.
 */
class AckLatencyQuickIT {

  private static final List<String> STREAMERS =
      List.of("cdc_latency_", "cdc_debezium_latency_", "cdc_polling_latency_");
  private static final List<String> RATES = List.of("1k", "2k", "5k", "half_max", "quarter_max");

  @Test
  void theRaceReportsEveryStreamerAtEveryRate() throws Exception {
    ByteArrayOutputStream progress = new ByteArrayOutputStream();
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(progress, true, StandardCharsets.UTF_8),
                Set.of("acklatency"))
            .run();

    List<String> expected = new ArrayList<>(List.of("cdc_latency_writer_max_tx_per_s"));
    for (String s : STREAMERS) {
      expected.add(s + "idle_cpu_ms_per_s");
      for (String r : RATES) {
        for (String f :
            List.of("p50_ms", "p99_ms", "p999_ms", "achieved_per_s", "cpu_us_per_event")) {
          expected.add(s + r + "_" + f);
        }
      }
    }
    for (String r : RATES) {
      expected.add("cdc_latency_" + r + "_p99_vs_debezium");
      expected.add("cdc_latency_" + r + "_p99_vs_polling");
    }
    assertThat(report.measurements())
        .extracting(Measurement::name)
        .containsExactlyInAnyOrderElementsOf(expected);
    for (Measurement m : report.measurements()) {
      assertThat(Double.isFinite(m.value())).as(m.name()).isTrue();
      if (m.name().matches(".*_p(50|99|999)_ms")) {
        // the broker's stamp is truncated to the millisecond and read at its middle, and the writer
        // reads its clock after commit() returned: a sub-millisecond latency on a quiet machine can
        // read up to half a millisecond below zero; a whole millisecond below is a measuring error
        assertThat(m.value()).as(m.name()).isGreaterThan(-1.0);
      } else {
        assertThat(m.value()).as(m.name()).isPositive();
      }
      if (m.name().endsWith("_p99_ms")) {
        // where the tail comes from: its windows, this JVM's GC and the server's checkpoints
        assertThat(m.note())
            .as(m.name())
            .containsPattern("tail: \\d+ windows? past 20 ms \\(worst [0-9.-]+ ms, committed at ")
            .containsPattern("GC: \\d+ pauses, \\d+ ms; checkpoints: \\d+;")
            .containsPattern("stall time, ms: cpu some [0-9?]+, io some [0-9?]+, io full [0-9?]+");
      }
    }
    assertThat(target(report, "cdc_polling_latency_1k_p99_ms")).contains(Target.atMost(50));
    assertThat(target(report, "cdc_latency_1k_p99_ms")).contains(Target.atMost(20));
    assertThat(target(report, "cdc_polling_latency_2k_p99_ms")).isEmpty();
    assertThat(target(report, "cdc_debezium_latency_1k_p99_ms")).isEmpty();
  }

  private static java.util.Optional<Target> target(BenchReport report, String name) {
    return report.measurements().stream()
        .filter(m -> m.name().equals(name))
        .findFirst()
        .orElseThrow()
        .target();
  }
}
