package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Runs the opt-in {@code inboxkeys} group in quick mode: every figure present, positive and finite,
 * each ratio the quotient of its two figures; never asserts on performance.
 */
class InboxKeysQuickIT {

  @Test
  void bothKeyOrdersAreMeasuredWithOneAndTwelveConnections() throws Exception {
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                Set.of("inboxkeys"))
            .run();

    assertThat(report.measurements())
        .extracting(Measurement::name)
        .containsExactlyInAnyOrder(
            "inbox_claim_v15_keys_pg_us_per_record_1conn",
            "inbox_claim_v16_keys_pg_us_per_record_1conn",
            "inbox_claim_v16_vs_v15_1conn",
            "inbox_claim_v15_keys_pg_us_per_record_12conn",
            "inbox_claim_v16_keys_pg_us_per_record_12conn",
            "inbox_claim_v16_vs_v15_12conn");
    for (String c : List.of("1conn", "12conn")) {
      double v15 = value(report, "inbox_claim_v15_keys_pg_us_per_record_" + c);
      double v16 = value(report, "inbox_claim_v16_keys_pg_us_per_record_" + c);
      assertThat(v15).as("v15 " + c).isPositive().isFinite();
      assertThat(v16).as("v16 " + c).isPositive().isFinite();
      assertThat(value(report, "inbox_claim_v16_vs_v15_" + c)).isCloseTo(v16 / v15, within(1e-9));
    }
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }

  private static double value(BenchReport report, String name) {
    return report.get(name).orElseThrow().value();
  }
}
