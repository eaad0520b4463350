package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.testkit.RabbitMqServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the shard-scaling figures of the opt-in {@code rabbitmq} group in quick mode (one round
 * each): every figure present, finite and positive, the two scaling ratios with their targets, the
 * hand-over times of a kill (an instance in a JVM of its own), a join and a leave. Never asserts on
 * performance. Needs RabbitMQ (skipped outside CI without one).
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class RabbitScalingQuickIT {

  @Test
  void scalingAndHandOverFiguresAreComplete() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    List<Measurement> out = new ArrayList<>();
    try (BenchEnv env = BenchEnv.withoutKafka()) {
      RabbitWork work = new RabbitWork(server.uri());
      out.addAll(new RabbitScaling(env, BenchConfig.quickMode(), work).run());
      out.addAll(new RabbitHandover(env, BenchConfig.quickMode(), work).run());
    }

    List<String> expected = new ArrayList<>();
    for (int n : RabbitScaling.INSTANCES) {
      expected.add("rabbit_shard_leases_" + n + "_instances_per_s");
      expected.add("rabbit_shard_leases_" + n + "_instances_cpu_us_per_msg");
      expected.add("spring_rabbit_competing_" + n + "_instances_per_s");
      expected.add("spring_rabbit_competing_" + n + "_instances_cpu_us_per_msg");
    }
    expected.addAll(
        List.of(
            "rabbit_shard_leases_2_vs_1_instances",
            "rabbit_shard_leases_4_vs_1_instances",
            "spring_rabbit_competing_4_vs_1_instances",
            "rabbit_shard_leases_4_vs_spring_competing_4",
            "rabbit_shard_handover_kill_ms",
            "rabbit_shard_handover_join_ms",
            "rabbit_shard_handover_leave_ms"));
    assertThat(out).extracting(Measurement::name).containsExactlyInAnyOrderElementsOf(expected);
    for (Measurement m : out) {
      assertThat(Double.isFinite(m.value())).as(m.name()).isTrue();
      assertThat(m.value()).as(m.name()).isPositive();
    }
    for (String ratio :
        List.of("rabbit_shard_leases_2_vs_1_instances", "rabbit_shard_leases_4_vs_1_instances")) {
      Measurement m = out.stream().filter(x -> x.name().equals(ratio)).findFirst().orElseThrow();
      assertThat(m.target()).as(ratio).isPresent();
      assertThat(m.met()).as(ratio).isPresent();
    }
    assertThat(
            out.stream()
                .filter(m -> m.name().equals("spring_rabbit_competing_1_instances_per_s"))
                .findFirst()
                .orElseThrow()
                .note())
        .contains("NO per-key order");
  }
}
