package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.testkit.RabbitCluster;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code ./postbox verify --transport rabbitmq --cluster --quick --scenarios
 * kill-9,cluster-node-cut-off,postgres-failover}: the RabbitMQ campaign's processes (two producers,
 * two relays, two consumers, each its own JVM, every client given the three nodes' addresses and
 * both PostgreSQL servers') on a three-node cluster and a PostgreSQL primary with a synchronous
 * standby: {@code kill -9} of consumers and relays; the node holding a random shard queue's quorum
 * leader cut off from the other nodes for 10 s (the nodes in their own network namespaces) while
 * the clients still reach it, so that it pauses and they move to the majority, then reconnected;
 * where namespaces cannot be made (not root) that node killed with {@code kill -9} and restarted
 * instead ({@code cluster-node-kill}, one line says why); and the primary killed with {@code kill
 * -9}, the standby promoted and the former primary rebuilt as its standby. For each scenario: zero
 * lost, zero dead-lettered, zero duplicate effects, per-key order kept, nothing inconclusive (so
 * every fault fired), messages committed. One campaign run, so one cluster start, for the three
 * scenarios (each still its own phases and checks, as the command runs them). Skipped without
 * RabbitMQ outside CI.
 */
// a whole campaign run in one method: longer than the default 10 minutes per test
@Timeout(value = 40, unit = TimeUnit.MINUTES)
class RabbitClusterCampaignIT {

  @Test
  void theCampaignOnAClusterHoldsEveryGuaranteeThroughKillsALeadersNodeCutOffAndAFailover()
      throws Exception {
    // the cut-off took the node kill's place (2026-12-06, one run each on a shared 2-core machine:
    // the test took 111.5 s with the cut-off, 105.0 s with the kill)
    Optional<String> noNetworks = RabbitCluster.whyNoOwnNetworks();
    String nodeFault = noNetworks.isEmpty() ? "cluster-node-cut-off" : "cluster-node-kill";
    noNetworks.ifPresent(why ->
        System.out.println(
            "RabbitClusterCampaignIT: cluster-node-kill in place of cluster-node-cut-off: " + why));
    runAndCheck(
        List.of("kill-9", nodeFault, "postgres-failover"),
        List.of("rabbitmq-kill-9", "rabbitmq-" + nodeFault, "rabbitmq-postgres-failover"));
  }

  private static void runAndCheck(List<String> scenarios, List<String> names) throws Exception {
    RabbitCluster.builderOrSkip(); // skips (fails in CI) without rabbitmq-server
    Path dir = Path.of("target", "verify-rabbit-cluster-it", Long.toString(System.nanoTime()));
    RabbitCampaign.Settings settings =
        RabbitVerify.quick(20261205L, dir, scenarios, RelayMode.IDEMPOTENT, true);
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    Optional<List<ScenarioResult>> results;
    try (RabbitCampaign campaign = new RabbitCampaign(settings, out)) {
      results = campaign.run();
    }
    String text = output.text();
    assertThat(results).as(text).isPresent();
    assertThat(results.get()).extracting(ScenarioResult::name).containsExactlyElementsOf(names);
    for (ScenarioResult r : results.get()) {
      assertThat(r.violations()).as("violations in %s; see %s\n%s", r.name(), dir, text).isZero();
      assertThat(r.inconclusiveReasons()).as("%s inconclusive\n%s", r.name(), text).isEmpty();
      assertThat(r.findings().messages()).as("%s messages", r.name()).isPositive();
      // a synchronous standby: an acknowledged commit PostgreSQL lost would be a violation
      assertThat(r.findings().postgresLoss()).isEqualTo(Findings.PostgresLoss.VIOLATION);
    }
  }
}
