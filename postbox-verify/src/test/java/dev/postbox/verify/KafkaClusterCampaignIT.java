package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code ./postbox verify --cluster --quick --async-standby --scenarios
 * cluster-broker-cut-off,postgres-failover}: the Kafka campaign's processes (two producers, two
 * relays, three consumers, each its own JVM, every client given the three brokers' addresses and
 * both PostgreSQL servers') on the test kit's three-broker KRaft cluster (replication factor 3,
 * {@code min.insync.replicas=2}) and a PostgreSQL primary with an <b>asynchronous</b> standby
 * ({@code --async-standby}): first the broker leading a random partition of the topic cut off from
 * the other two (each broker in its own network namespace; the clients still reach it) while relays
 * publish and consumers consume, and reconnected (where this user cannot make namespaces, not root,
 * that leader is killed with {@code kill -9} and started again instead); then the standby cut off
 * the primary for a second, the primary killed with {@code kill -9}, the standby promoted and the
 * former primary rebuilt as its standby. The whole history checked by the single broker's checker:
 * zero lost, zero dead-lettered, zero duplicate effects, per-key order and offsets kept, each fault
 * fired and is in the report's fault list; the commits PostgreSQL itself lost in the failover
 * (journaled by the producers and consumers) are counted apart and measured, not violations. The
 * synchronous standby's failover is in {@link RabbitClusterCampaignIT}, where such a loss is a
 * violation.
 */
// a whole campaign run in one method: longer than the default 10 minutes per test
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class KafkaClusterCampaignIT {

  @Test
  void theCampaignOnAClusterHoldsEveryGuaranteeWhenALeaderIsCutOffAndPostgresFailsOver()
      throws Exception {
    long seed = 20261206L;
    Path dir = Path.of("target", "verify-kafka-cluster-it", Long.toString(System.nanoTime()));
    VerifyCli cli = new VerifyCli();
    cli.quick = true;
    cli.cluster = true;
    cli.asyncStandby = true;
    cli.phaseSeconds = 15;
    java.util.Optional<String> noNetworks = dev.postbox.testkit.KafkaCluster.whyNoOwnNetworks();
    Scenario.Fault brokerFault =
        noNetworks.isEmpty()
            ? Scenario.Fault.CLUSTER_BROKER_CUT_OFF
            : Scenario.Fault.CLUSTER_LEADER_KILL;
    noNetworks.ifPresent(
        why -> System.out.println("a leader killed in place of cut off (" + why + ")"));
    cli.scenarios = List.of(brokerFault.kind, Scenario.Fault.POSTGRES_FAILOVER.kind);
    Campaign.Settings settings = cli.settings(seed, dir);
    assertThat(settings.cluster()).isTrue();
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    Instant started = Instant.now();
    List<ScenarioResult> results;
    try (Campaign campaign = new Campaign(settings, out)) {
      results = campaign.run();
    }
    Report report =
        new Report(seed, results, started, Duration.between(started, Instant.now()))
            .withRecord(
                RunRecord.of(
                    List.of("--cluster", "--async-standby"), "kafka", "idempotent", "inbox", true),
                settings.dir().resolve("faults.log"));
    report.printText(out);
    report.writeJson(dir.resolve("report.json"));
    String text = output.text();

    assertThat(text).contains("Kafka cluster of 3 brokers", "transport kafka (cluster)");
    assertThat(text).contains("PostgreSQL with an asynchronous standby");
    assertThat(results)
        .extracting(ScenarioResult::name)
        .containsExactly(brokerFault.kind, "postgres-failover");
    for (ScenarioResult r : results) {
      assertThat(r.violations()).as("violations; see %s\n%s", dir, text).isZero();
      assertThat(r.inconclusiveReasons()).as("inconclusive\n%s", text).isEmpty();
      assertThat(r.findings().messages()).as("committed messages").isPositive();
      assertThat(r.faultsFired().getOrDefault(r.name(), 0))
          .as("%s fired\n%s", r.name(), text)
          .isPositive();
    }
    assertThat(results.get(1).findings().postgresLoss())
        .as("commits PostgreSQL lost are measured with an asynchronous standby")
        .isEqualTo(Findings.PostgresLoss.MEASURED);
    assertThat(java.nio.file.Files.readString(settings.dir().resolve("faults.log")))
        .contains("the standby's stream cut 1000 ms before it");
    assertThat(report.exitCode()).isEqualTo(Report.OK);
    JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());
    assertThat(json.path("transport").asText()).isEqualTo("kafka");
    assertThat(json.path("cluster").asBoolean()).isTrue();
    assertThat(json.path("scenarios").get(1).path("lost_by_postgres_judged").asText())
        .isEqualTo("measured");
    assertThat(json.path("faults").findValuesAsText("kind"))
        .contains(brokerFault.kind, "postgres-failover");
  }
}
