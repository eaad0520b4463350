package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The partitions scenario ({@code ./postbox verify --quick --scenarios partitions}): a relay cut
 * off from PostgreSQL but not from the broker, a consumer cut off from the broker but not from
 * PostgreSQL, each healed; zero violations. Without root (no network namespaces) the scenario must
 * report itself inconclusive with the reason, and this test is then skipped (after checking that).
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 40, unit = TimeUnit.MINUTES)
class PartitionsCampaignIT {

  @Test
  void partitionsHealWithoutViolations() throws Exception {
    long seed = 20261201L;
    Path dir = Path.of("target", "verify-it", "partitions-" + System.currentTimeMillis());
    VerifyCli cli = new VerifyCli();
    cli.quick = true;
    cli.scenarios = List.of(Scenario.PARTITIONS);
    Optional<String> unavailable = NetworkPartitions.unavailable();
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    Instant started = Instant.now();
    List<ScenarioResult> results;
    try (Campaign campaign = new Campaign(cli.settings(seed, dir), out)) {
      results = campaign.run();
    }
    Report report = new Report(seed, results, started, Duration.between(started, Instant.now()));
    report.printText(out);
    report.writeJson(dir.resolve("report.json"));
    String text = output.text();

    assertThat(results).extracting(ScenarioResult::name).containsExactly(Scenario.PARTITIONS);
    ScenarioResult r = results.get(0);
    if (unavailable.isPresent()) {
      assertThat(r.inconclusiveReasons()).containsExactly("not run: " + unavailable.get());
      assertThat(report.exitCode()).isEqualTo(Report.INCONCLUSIVE);
      assumeTrue(false, "no network namespaces here: " + unavailable.get());
    }
    assertThat(r.violations()).as("violations; see %s\n%s", dir, text).isZero();
    assertThat(r.inconclusiveReasons()).as("inconclusive\n%s", text).isEmpty();
    assertThat(r.findings().messages()).as("committed messages").isPositive();
    for (Scenario.Fault f : Scenario.PARTITION_FAULTS) {
      assertThat(r.faultsFired().getOrDefault(f.kind, 0))
          .as("%s fired\n%s", f.kind, text)
          .isPositive();
    }
    assertThat(report.exitCode()).isEqualTo(Report.OK);
  }
}
