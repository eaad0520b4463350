package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.postbox.testkit.RabbitMqServer;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The RabbitMQ campaign's partitions ({@code ./postbox verify --transport rabbitmq --quick
 * --scenarios partitions}): a relay cut off from PostgreSQL but not from RabbitMQ, a consumer cut
 * off from RabbitMQ but not from PostgreSQL, each past its lease or heartbeat and healed; zero
 * lost, zero dead-lettered, zero duplicate effects, per-key order kept. Without root the scenario
 * must report itself inconclusive with the reason, and this test is then skipped (after checking
 * that); without a RabbitMQ installation it is skipped (failed in CI) as every RabbitMQ test.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 40, unit = TimeUnit.MINUTES)
class RabbitPartitionsCampaignIT {

  @Test
  void rabbitPartitionsHealWithoutViolations() throws Exception {
    Optional<Path> script = RabbitMqServer.findScript();
    if (script.isEmpty()) {
      RabbitMqServer.sharedOrSkip(); // the one line (or, in CI, the failure) every test gives
    }
    assertThat(RabbitPartitions.RELAY_FAULT)
        .isEqualTo(Scenario.Fault.PARTITION_RELAY_POSTGRES.kind); // one name on both transports
    long seed = 20261202L;
    Path dir = Path.of("target", "verify-rabbit-it", "partitions-" + System.currentTimeMillis());
    RabbitCampaign.Settings settings =
        RabbitVerify.quick(seed, dir, List.of(RabbitPartitions.SCENARIO));
    Optional<String> unavailable =
        Optional.ofNullable(System.getenv(RabbitMqServer.URL_ENV))
            .filter(u -> !u.isBlank())
            .map(u -> "partitions need this command's own RabbitMQ node")
            .or(NetworkPartitions::unavailable);
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    Optional<List<ScenarioResult>> results;
    // its own node (null: not a shared one), which listens on the partitions' broker address
    try (RabbitCampaign campaign = new RabbitCampaign(settings, out, null)) {
      results = campaign.run();
    }
    String text = output.text();
    assertThat(results).as(text).isPresent();
    assertThat(results.get())
        .extracting(ScenarioResult::name)
        .containsExactly(RabbitCampaign.PREFIX + RabbitPartitions.SCENARIO);
    ScenarioResult r = results.get().get(0);
    if (unavailable.isPresent()) {
      assertThat(r.inconclusiveReasons())
          .singleElement()
          .asString()
          .startsWith("not run: " + unavailable.get());
      assumeTrue(false, "no network namespaces here: " + unavailable.get());
    }
    assertThat(r.violations()).as("violations; see %s\n%s", dir, text).isZero();
    assertThat(r.inconclusiveReasons()).as("inconclusive\n%s", text).isEmpty();
    assertThat(r.findings().messages()).as("committed messages").isPositive();
    for (String fault : List.of(RabbitPartitions.RELAY_FAULT, RabbitPartitions.CONSUMER_FAULT)) {
      assertThat(r.faultsFired().getOrDefault(fault, 0))
          .as("%s fired\n%s", fault, text)
          .isPositive();
    }
  }
}
