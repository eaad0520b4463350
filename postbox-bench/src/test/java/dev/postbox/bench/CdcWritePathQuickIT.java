package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Runs the opt-in {@code cdcwrite} group in quick mode: the write path of business-only
 * transactions, the table outbox and the emit-message outbox both ways. Checks that every figure is
 * present and positive and that each outbox is measured against business-only; never asserts on
 * performance.
 */
class CdcWritePathQuickIT {

  @Test
  void theWritePathReportsEveryVariantAgainstBusinessOnly() throws Exception {
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                Set.of("cdcwrite"))
            .run();

    Map<String, Measurement> byName =
        report.measurements().stream()
            .collect(Collectors.toMap(Measurement::name, Function.identity()));
    assertThat(byName)
        .containsOnlyKeys(
            "cdc_business_only_tx_per_s",
            "cdc_table_outbox_tx_per_s",
            "cdc_emit_message_outbox_tx_per_s",
            "cdc_emit_message_in_transaction_tx_per_s",
            "cdc_emit_vs_table_outbox");
    byName.values().forEach(m -> assertThat(m.value()).as(m.name()).isPositive().isFinite());
    for (String outbox :
        Set.of(
            "cdc_table_outbox_tx_per_s",
            "cdc_emit_message_outbox_tx_per_s",
            "cdc_emit_message_in_transaction_tx_per_s")) {
      assertThat(byName.get(outbox).baselineName())
          .as(outbox)
          .contains("cdc_business_only_tx_per_s");
    }
    assertThat(byName.get("cdc_emit_message_in_transaction_tx_per_s").target()).isPresent();
  }
}
