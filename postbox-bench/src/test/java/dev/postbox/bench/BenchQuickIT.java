package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Runs the quick mode end to end (what CI runs) and checks that the report is complete and sane:
 * every measurement present, every value positive and finite, the JSON in its published shape.
 * Never asserts on performance.
 */
class BenchQuickIT {

  static final List<String> EXPECTED =
      List.of(
          "drain_ceiling_events_per_s",
          "raw_producer_events_per_s",
          "relay_1_instance_events_per_s",
          "relay_2_instances_events_per_s",
          "relay_vs_drain_ceiling",
          "relay_vs_raw_producer",
          "gruelbox_events_per_s",
          "debezium_events_per_s",
          "relay_vs_best_peer",
          "business_only_tx_per_s",
          "outbox_write_tx_per_s",
          "bare_row_write_tx_per_s",
          "outbox_write_vs_bare_row",
          "consumer_alo_per_s",
          "consumer_eo_single_per_s",
          "consumer_eo_partition_inbox_per_s",
          "consumer_eo_offsets_per_s",
          "consumer_eo_batch_per_s",
          "spring_kafka_jdbc_per_s",
          "consumer_eo_batch_vs_spring_kafka",
          "spring_kafka_batch_tx_jdbc_per_s",
          "consumer_eo_batch_vs_spring_kafka_batch",
          "consumer_eo_batch_vs_spring_kafka_batch_paired",
          "consumer_eo_batch_steady_per_s",
          "spring_kafka_batch_steady_per_s",
          "consumer_eo_batch_vs_spring_kafka_batch_steady",
          "consumer_eo_batch_cpu_us_per_msg",
          "spring_kafka_batch_cpu_us_per_msg",
          "consumer_eo_batch_cpu_vs_spring_kafka_batch",
          "consumer_alo_batch_per_s",
          "consumer_alo_batch_cpu_us_per_msg",
          "consumer_alo_batch_vs_spring_kafka_batch",
          "consumer_eo_batch_vs_alo_batch",
          "e2e_1k_p50_ms",
          "e2e_1k_p99_ms",
          "e2e_1k_p999_ms",
          "e2e_5k_p50_ms",
          "e2e_5k_p99_ms",
          "e2e_5k_p999_ms",
          "e2e_20k_p50_ms",
          "e2e_20k_p99_ms",
          "e2e_20k_p999_ms",
          "e2e_max_rate_p99_under_50ms",
          "key_order_partition_per_s",
          "key_order_key_per_s",
          "key_order_unordered_per_s",
          "consumer_peak_heap_mb",
          "consumer_live_heap_mb");

  @Test
  void quickModeProducesACompleteReport() throws Exception {
    ByteArrayOutputStream progress = new ByteArrayOutputStream();
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(), new PrintStream(progress, true, StandardCharsets.UTF_8))
            .run();

    assertThat(report.measurements()).extracting(Measurement::name).containsAll(EXPECTED);
    for (Measurement m : report.measurements()) {
      boolean mayBeZero = m.name().equals("e2e_max_rate_p99_under_50ms");
      assertThat(Double.isFinite(m.value())).as(m.name()).isTrue();
      assertThat(m.value()).as(m.name()).isGreaterThanOrEqualTo(0);
      if (!mayBeZero) {
        assertThat(m.value()).as(m.name()).isGreaterThan(0);
      }
    }

    JsonNode json = new ObjectMapper().readTree(report.toJson());
    assertThat(json.get("quick").asBoolean()).isTrue();
    assertThat(json.get("cores").asInt()).isPositive();
    assertThat(json.has("date")).isTrue();
    assertThat(json.has("memory_gb")).isTrue();
    for (String name : EXPECTED) {
      JsonNode m = json.get(name);
      assertThat(m).as(name).isNotNull();
      for (String field :
          List.of("value", "unit", "baseline", "baseline_name", "ratio", "target", "met", "note")) {
        assertThat(m.has(field)).as(name + "." + field).isTrue();
      }
    }
    assertThat(json.get("outbox_write_tx_per_s").get("baseline_name").asText())
        .isEqualTo("business_only_tx_per_s");
    assertThat(json.get("relay_vs_best_peer").get("met").isBoolean()).isTrue();
    assertThat(report.toMarkdown())
        .contains("| measurement | value | baseline | ratio | target | met |");
  }
}
