package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * A campaign that checks nothing never says OK: an unknown or inapplicable {@code --scenarios} name
 * is refused before anything starts, and a report without a single checked scenario is
 * INCONCLUSIVE.
 */
class ScenarioSelectionTest {

  @Test
  void anUnknownOrInapplicableScenarioNameIsRefusedBeforeAnythingStarts() {
    for (String[] bad :
        List.of(
            new String[] {"--scenarios", "mixd"},
            new String[] {"--scenarios", "mixed,no-such-scenario"},
            // a RabbitMQ scenario on the Kafka campaign, and a Kafka-only one on RabbitMQ
            new String[] {"--scenarios", "connection-drops"},
            new String[] {"--transport", "rabbitmq", "--scenarios", "redis-window"},
            // the polling relay's crash points are not the CDC campaign's
            new String[] {"--relay", "cdc", "--scenarios", "relay-crash-points"},
            new String[] {
              "--transport", "rabbitmq", "--relay", "cdc", "--scenarios", "relay-crash-points"
            })) {
      StringWriter err = new StringWriter();
      int code = new CommandLine(new VerifyCli()).setErr(new PrintWriter(err)).execute(bad);
      assertThat(code).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(err.toString()).as(String.join(" ", bad)).contains("--scenarios", "its scenarios");
    }
  }

  @Test
  void aConsumerModeTheTransportsCampaignDoesNotRunIsRefusedBeforeAnythingStarts() {
    for (String[] bad :
        List.of(
            new String[] {"--transport", "rabbitmq", "--consumer-mode", "offsets"},
            new String[] {"--consumer-mode", "shard-leases"})) {
      StringWriter err = new StringWriter();
      int code = new CommandLine(new VerifyCli()).setErr(new PrintWriter(err)).execute(bad);
      assertThat(code).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(err.toString()).as(String.join(" ", bad)).contains("--consumer-mode");
    }
    assertThat(ConsumerMode.parse("shard-leases")).isEqualTo(ConsumerMode.SHARD_LEASES);
    assertThat(ConsumerMode.SHARD_LEASES.runsOn("rabbitmq")).isTrue();
    assertThat(ConsumerMode.INBOX.runsOn("rabbitmq")).isTrue();
    assertThat(ConsumerMode.INBOX.runsOn("kafka")).isTrue();
    assertThat(ConsumerMode.OFFSETS.runsOn("kafka")).isTrue();
  }

  @Test
  void theClusterAndItsNodeKillAndFailoverGoTogetherOnRabbitMq() {
    for (String[] bad :
        List.of(
            new String[] {"--transport", "rabbitmq", "--scenarios", "cluster-node-kill"},
            new String[] {"--transport", "rabbitmq", "--scenarios", "cluster-rolling-restart"},
            new String[] {"--transport", "rabbitmq", "--scenarios", "cluster-node-cut-off"},
            new String[] {"--transport", "rabbitmq", "--scenarios", "postgres-failover"},
            new String[] {"--transport", "rabbitmq", "--cluster", "--scenarios", "broker-kill"})) {
      StringWriter err = new StringWriter();
      int code = new CommandLine(new VerifyCli()).setErr(new PrintWriter(err)).execute(bad);
      assertThat(code).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(err.toString()).as(String.join(" ", bad)).contains("--cluster");
    }
    assertThat(VerifyCli.scenarioNames("rabbitmq", RelayMode.IDEMPOTENT))
        .contains(
            "cluster-node-kill",
            "rabbitmq-cluster-node-kill",
            "cluster-rolling-restart",
            "rabbitmq-cluster-rolling-restart",
            "cluster-node-cut-off",
            "rabbitmq-cluster-node-cut-off",
            "postgres-failover",
            "rabbitmq-postgres-failover");
    // one fault, one name in both campaigns' fault logs and the ledger
    assertThat(RabbitCampaign.FAILOVER).isEqualTo(Scenario.Fault.POSTGRES_FAILOVER.kind);
  }

  @Test
  void requestReplyRunsOnTheClusterOnlyWhenNamedOnAPairItFailsOver() throws Exception {
    VerifyCli cli = new VerifyCli();
    new CommandLine(cli).parseArgs("--cluster", "--scenarios", "request-reply");
    cli.checkClusterScenarios(); // accepted: no usage error
    assertThat(new RequestReplyScenario(1, java.nio.file.Path.of("x"), System.out).failovers(2))
        .isNotNull();
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> new RequestReplyScenario(1, java.nio.file.Path.of("x"), System.out).failovers(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("failovers");
  }

  @Test
  void kafkasClusterScenariosRunOnlyOnTheClusterAndTheSingleBrokersNotOnIt() {
    for (String[] bad :
        List.of(
            new String[] {"--scenarios", "cluster-leader-kill"},
            new String[] {"--scenarios", "kill-9,cluster-rolling-restart"},
            new String[] {"--cluster", "--scenarios", "broker-restart"},
            new String[] {"--cluster", "--scenarios", "partitions"},
            new String[] {"--cluster", "--scenarios", "redis-window"})) {
      StringWriter err = new StringWriter();
      int code = new CommandLine(new VerifyCli()).setErr(new PrintWriter(err)).execute(bad);
      assertThat(code).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(err.toString()).as(String.join(" ", bad)).contains("--cluster");
    }
    List<String> clusterNames =
        List.of(
            "cluster-leader-kill",
            "cluster-leader-freeze",
            "cluster-controller-kill",
            "cluster-rolling-restart",
            "cluster-isr-below-min",
            "cluster-broker-cut-off",
            "postgres-failover");
    assertThat(VerifyCli.scenarioNames("kafka", RelayMode.IDEMPOTENT)).containsAll(clusterNames);
    // on the cluster: its own scenarios first, then the processes' own, no broker restart
    List<Scenario> onCluster = Scenario.all(RelayMode.IDEMPOTENT, true);
    assertThat(onCluster.subList(0, clusterNames.size()))
        .extracting(Scenario::name)
        .containsExactlyElementsOf(clusterNames);
    assertThat(onCluster)
        .extracting(Scenario::name)
        .contains("kill-9", "pauses", "relay-crash-points", "mixed")
        .doesNotContain("broker-restart", "partitions");
    assertThat(onCluster).noneMatch(Scenario::singleBroker);
    Scenario mixed = onCluster.stream().filter(x -> x.name().equals("mixed")).findFirst().get();
    assertThat(mixed.external())
        .contains(
            Scenario.Fault.CLUSTER_LEADER_KILL,
            Scenario.Fault.POSTGRES_FAILOVER,
            Scenario.Fault.KILL_9)
        .doesNotContain(Scenario.Fault.BROKER_RESTART);
    // and the single broker's campaign runs none of the cluster's faults
    assertThat(Scenario.all()).noneMatch(Scenario::cluster);
    assertThat(Scenario.all(RelayMode.CDC, true))
        .extracting(Scenario::name)
        .startsWith("cluster-leader-kill")
        .contains("cdc-crash-points");
    assertThat(Scenario.selected(RelayMode.IDEMPOTENT, true, List.of("partitions"))).isEmpty();
  }

  @Test
  void everyScenarioOfEachCampaignIsAccepted() {
    assertThat(VerifyCli.scenarioNames("kafka", RelayMode.IDEMPOTENT))
        .containsAll(Scenario.all().stream().map(Scenario::name).toList())
        .contains("partitions", "redis-window", "request-reply", "transform");
    assertThat(VerifyCli.scenarioNames("kafka", RelayMode.CDC))
        .containsAll(Scenario.cdc().stream().map(Scenario::name).toList());
    assertThat(VerifyCli.scenarioNames("rabbitmq", RelayMode.IDEMPOTENT))
        .contains("rabbitmq-broker-kill", "broker-kill", "partitions", "request-reply", "scaling")
        .doesNotContain("redis-window");
  }

  @Test
  void unexpectedExitsAndUnstampedRecordsArePrintedUnderTheirScenario() {
    Findings f =
        Findings.builder()
            .messages(10)
            .topicRecords(10)
            .offsetSamples(3)
            .offsetRecordsChecked(3)
            .unstampedRecords(4)
            .build();
    ScenarioResult r =
        new ScenarioResult(
            "kill-9",
            1,
            5,
            java.util.Map.of("kill-9", 5),
            java.util.Map.of(),
            f,
            5,
            false,
            2,
            List.of());
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    new Report(7, List.of(r), Instant.EPOCH, Duration.ZERO)
        .printText(new PrintStream(buffer, true, StandardCharsets.UTF_8));
    assertThat(buffer.toString(StandardCharsets.UTF_8))
        .contains("2 unexpected process exits")
        .contains("4 records without the relay's lane/epoch header");
  }

  @Test
  void aReportOfNoScenarioIsInconclusiveNotOk() {
    Report report = new Report(7, List.of(), Instant.EPOCH, Duration.ZERO);
    assertThat(report.exitCode()).isEqualTo(Report.INCONCLUSIVE);
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    report.printText(new PrintStream(buffer, true, StandardCharsets.UTF_8));
    assertThat(buffer.toString(StandardCharsets.UTF_8))
        .contains("no scenario was checked")
        .contains("result: INCONCLUSIVE");
  }
}
