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
 * Runs the opt-in {@code cluster} group in quick mode: a three-broker Kafka cluster beside the
 * single broker. Checks the exact key set, that every figure is positive and finite, and that every
 * cluster figure has its single-broker baseline of the same run; never asserts on performance.
 */
class ClusterQuickIT {

  private static final String SINGLE = "cluster_single_broker_";

  @Test
  void theClusterGroupReportsEveryFigureAgainstTheSingleBroker() throws Exception {
    BenchReport report =
        new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                Set.of("cluster"))
            .run();

    Map<String, Measurement> byName =
        report.measurements().stream()
            .collect(Collectors.toMap(Measurement::name, Function.identity()));
    Map<String, String> baselines =
        Map.of(
            "cluster_relay_1_instance_events_per_s", SINGLE + "relay_1_instance_events_per_s",
            "cluster_relay_2_instances_events_per_s", SINGLE + "relay_1_instance_events_per_s",
            "cluster_relay_4_instances_events_per_s", SINGLE + "relay_1_instance_events_per_s",
            "cluster_consumer_eo_batch_per_s", SINGLE + "consumer_eo_batch_per_s",
            "cluster_commit_to_ack_p50_ms", SINGLE + "commit_to_ack_p50_ms",
            "cluster_commit_to_ack_p99_ms", SINGLE + "commit_to_ack_p99_ms");
    assertThat(byName)
        .containsOnlyKeys(
            SINGLE + "relay_1_instance_events_per_s",
            "cluster_relay_1_instance_events_per_s",
            "cluster_relay_2_instances_events_per_s",
            "cluster_relay_4_instances_events_per_s",
            SINGLE + "consumer_eo_batch_per_s",
            "cluster_consumer_eo_batch_per_s",
            SINGLE + "commit_to_ack_p50_ms",
            SINGLE + "commit_to_ack_p99_ms",
            "cluster_commit_to_ack_p50_ms",
            "cluster_commit_to_ack_p99_ms");
    byName.values().forEach(m -> assertThat(m.value()).as(m.name()).isPositive().isFinite());
    baselines.forEach((figure, baseline) -> {
      Measurement m = byName.get(figure);
      assertThat(m.baselineName()).as(figure).contains(baseline);
      assertThat(m.ratio()).as(figure).isPresent();
      assertThat(m.ratio().getAsDouble()).as(figure).isPositive().isFinite();
    });
  }
}
