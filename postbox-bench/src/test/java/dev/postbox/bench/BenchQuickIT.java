package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.testkit.RabbitMqServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
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

  /** The end-to-end race's pipelines and quick-mode rates (the full run adds 2k and 5k). */
  static final List<String> E2E_PIPELINES = List.of("cdc", "polling", "debezium_spring");

  /** The race's RabbitMQ pipelines, run where RabbitMQ is installed (or named by its URL). */
  static final List<String> E2E_RABBIT_PIPELINES = List.of("rabbit_polling", "rabbit_spring");

  static final List<String> E2E_QUICK_RATES = List.of("1k", "half_max", "quarter_max");

  /** Every figure the race reports per pipeline and rate. */
  static final List<String> E2E_FIGURES =
      List.of(
          "p50_ms",
          "p99_ms",
          "p999_ms",
          "p99_max_ms",
          "achieved_per_s",
          "hop_ack_p50_ms",
          "hop_ack_p99_ms",
          "hop_ack_tail_share_pct",
          "hop_poll_p50_ms",
          "hop_poll_p99_ms",
          "hop_poll_tail_share_pct",
          "hop_apply_p50_ms",
          "hop_apply_p99_ms",
          "hop_apply_tail_share_pct",
          "cpu_us_per_event",
          "cpu_jvm_us_per_event",
          "cpu_broker_us_per_event",
          "cpu_postgres_us_per_event");

  /**
   * A hop can read 0 (a reading under the broker stamp's resolution counts as 0; on RabbitMQ a
   * receipt before the relay read its batch's confirms), and so can its share of the tail: these
   * figures are checked non-negative only. The rate in the name has digits ({@code 1k}).
   */
  static final Pattern MAY_BE_ZERO =
      Pattern.compile(
          "e2e_max_rate_p99_under_50ms|e2e_[a-z0-9_]+_hop_[a-z]+_(p50_ms|p99_ms|tail_share_pct)");

  /**
   * Whether the race runs its RabbitMQ pipelines here (as it decides: a URL or an installation).
   */
  static boolean rabbitInstalled() {
    String url = System.getenv(RabbitMqServer.URL_ENV);
    return (url != null && !url.isBlank()) || RabbitMqServer.findScript().isPresent();
  }

  /** The keys of the race's RabbitMQ pipelines in quick mode. */
  static List<String> e2eRabbitKeys() {
    List<String> keys = new ArrayList<>();
    for (String pipeline : E2E_RABBIT_PIPELINES) {
      for (String rate : E2E_QUICK_RATES) {
        for (String figure : E2E_FIGURES) {
          keys.add("e2e_" + pipeline + "_" + rate + "_" + figure);
        }
      }
    }
    for (String rate : E2E_QUICK_RATES) {
      keys.add("e2e_rabbit_polling_vs_rabbit_spring_" + rate + "_p99");
    }
    return keys;
  }

  /** The end-to-end race's keys of the quick mode. */
  static List<String> e2eRaceKeys() {
    List<String> keys = new ArrayList<>(List.of("e2e_writers_max_per_s"));
    for (String pipeline : E2E_PIPELINES) {
      for (String rate : E2E_QUICK_RATES) {
        for (String figure : E2E_FIGURES) {
          keys.add("e2e_" + pipeline + "_" + rate + "_" + figure);
        }
      }
    }
    for (String ours : List.of("cdc", "polling")) {
      for (String rate : E2E_QUICK_RATES) {
        keys.add("e2e_" + ours + "_vs_debezium_spring_" + rate + "_p99");
      }
    }
    return keys;
  }

  @Test
  void quickModeProducesACompleteReport() throws Exception {
    ByteArrayOutputStream progress = new ByteArrayOutputStream();
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(), new PrintStream(progress, true, StandardCharsets.UTF_8))
            .run();

    List<String> expected = new ArrayList<>(EXPECTED);
    expected.addAll(e2eRaceKeys());
    boolean rabbit = rabbitInstalled();
    if (rabbit) {
      expected.addAll(e2eRabbitKeys());
    }
    assertThat(report.measurements()).extracting(Measurement::name).containsAll(expected);
    for (Measurement m : report.measurements()) {
      boolean mayBeZero = MAY_BE_ZERO.matcher(m.name()).matches();
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
    for (String name : expected) {
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
    assertThat(json.get("e2e_cdc_1k_p99_ms").get("met").isBoolean()).isTrue();
    assertThat(json.get("e2e_cdc_vs_debezium_spring_1k_p99").get("note").asText())
        .contains("baseline: the peer pipeline");
    List<String> pipelines = new ArrayList<>(E2E_PIPELINES);
    if (rabbit) {
      pipelines.addAll(E2E_RABBIT_PIPELINES);
      assertThat(json.get("e2e_rabbit_polling_vs_rabbit_spring_1k_p99").get("note").asText())
          .contains("Spring AMQP");
    }
    for (String pipeline : pipelines) {
      for (String rate : E2E_QUICK_RATES) {
        String name = "e2e_" + pipeline + "_" + rate;
        double p50 = json.get(name + "_p50_ms").get("value").asDouble();
        double p99 = json.get(name + "_p99_ms").get("value").asDouble();
        double p999 = json.get(name + "_p999_ms").get("value").asDouble();
        assertThat(p50).as(name + " p50 <= p99 <= p99.9").isLessThanOrEqualTo(p99);
        assertThat(p99).as(name + " p99 <= p99.9").isLessThanOrEqualTo(p999);
        double shares = 0;
        for (String hop : List.of("ack", "poll", "apply")) {
          shares += json.get(name + "_hop_" + hop + "_tail_share_pct").get("value").asDouble();
        }
        assertThat(shares).as(name + " tail shares").isBetween(99.9, 100.1);
      }
    }
    assertThat(report.toMarkdown())
        .contains("| measurement | value | baseline | ratio | target | met |");
  }
}
