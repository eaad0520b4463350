package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./postbox demo --cluster}, small: the shop on three Kafka brokers and a PostgreSQL primary
 * with a synchronous standby; while the orders are placed the leader of a partition of the orders
 * topic is killed (and started again) and the database fails over. The same invariants as on a
 * single node (nothing missing, per-key order, one effect per order, the stock, the dead letters,
 * the payments), plus the report's {@code cluster} and {@code faults}. No warehouse outage (it is
 * the single-node demo's subject, and the shortest outage that parks keys would double the run).
 */
// the cluster's start on a 2-core machine plus a whole demo run: longer than 10 minutes per test
@Timeout(value = 30, unit = TimeUnit.MINUTES)
class ClusterShopDemoIT {

  @Test
  void theShopKeepsItsInvariantsThroughALeaderKillAndADatabaseFailover(@TempDir Path dir)
      throws Exception {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    DemoReport report =
        new ShopDemo(
                new ShopDemo.Options(300, 30, 3, 2, 500, 3, 150, Duration.ofMinutes(3), dir, 0),
                new PrintStream(log, true, StandardCharsets.UTF_8),
                ShopTransport.Kind.KAFKA,
                RelayMode.POLLING_TABLE,
                true,
                Clock.systemUTC())
            .run();
    String output = log.toString(StandardCharsets.UTF_8);
    System.out.println(output);
    System.out.println(report.toText());

    assertThat(report.missing()).as(output).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.unexpected()).isZero();
    assertThat(report.published()).isEqualTo(report.committed());
    assertThat(report.effectsApplied()).isEqualTo(report.orders());
    assertThat(report.duplicateEffects()).isZero();
    assertThat(report.stockActual()).isEqualTo(report.stockExpected());
    assertThat(report.deadLettered()).isEqualTo(report.poisonUnfixable());
    assertThat(report.appliedAfterReplay()).isEqualTo(report.replayed());
    assertThat(report.duplicateCharges()).isZero();
    assertThat(report.ok()).as(report.toText()).isTrue();
    assertThat(report.inconclusive()).isFalse();

    assertThat(report.cluster()).isTrue();
    assertThat(report.faults())
        .extracting(ClusterFaults.Fault::kind)
        .containsExactly("kafka_leader_kill", "postgres_failover");
    for (ClusterFaults.Fault f : report.faults()) {
      assertThat(f.fired()).as(f.toString()).isTrue();
      assertThat(f.recoveryMs())
          .as("an order committed after %s reached the consumer", f.kind())
          .isNotNegative();
    }
    assertThat(report.faults().get(0).stepsMs())
        .containsKeys("new_leader", "broker_restarted", "replicas_in_sync");
    assertThat(report.faults().get(1).stepsMs()).containsKeys("promoted", "first_commit");

    Path json = dir.resolve("report.json");
    report.writeJson(json);
    JsonNode node = new ObjectMapper().readTree(Files.readString(json));
    for (String key :
        new String[] {
          "committed",
          "published",
          "missing",
          "order_violations",
          "topic_duplicates",
          "relay_crashes",
          "ok",
          "effects_applied",
          "duplicate_effects",
          "stock_expected",
          "stock_actual",
          "dead_lettered",
          "replayed",
          "applied_after_replay",
          "cluster",
          "faults"
        }) {
      assertThat(node.has(key)).as(key).isTrue();
    }
    assertThat(node.get("cluster").asBoolean()).isTrue();
    JsonNode fault = node.get("faults").get(1);
    for (String key :
        new String[] {"kind", "target", "fired", "at", "at_order", "recovery_ms", "steps_ms"}) {
      assertThat(fault.has(key)).as(key).isTrue();
    }
    PaymentsChecks.check(report, node, output);
  }
}
