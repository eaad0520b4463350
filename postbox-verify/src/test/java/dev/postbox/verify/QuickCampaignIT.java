package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The quick campaign (what {@code ./postbox verify --quick} runs): every scenario once, every crash
 * point fired at least twice, every fault (postgres-crash included) fired, keys parked and unparked
 * in the parking scenario, no violation (a dead letter is one), nothing inconclusive (an offset
 * audit without samples is). Runs in CI (a few minutes).
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 25, unit = TimeUnit.MINUTES)
class QuickCampaignIT {

  @Test
  void quickCampaignHoldsEveryGuarantee() throws Exception {
    long seed = 20261130L;
    Path dir = Path.of("target", "verify-it", Long.toString(System.currentTimeMillis()));
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    Instant started = Instant.now();
    List<ScenarioResult> results;
    try (Campaign campaign = new Campaign(VerifyCli.quickSettings(seed, dir), out)) {
      results = campaign.run();
    }
    Report report = new Report(seed, results, started, Duration.between(started, Instant.now()));
    report.printText(out);
    report.writeJson(dir.resolve("report.json"));
    String text = output.text();

    assertThat(results)
        .extracting(ScenarioResult::name)
        .containsExactlyElementsOf(Scenario.all().stream().map(Scenario::name).toList());
    for (ScenarioResult r : results) {
      assertThat(r.violations()).as("violations in %s; see %s\n%s", r.name(), dir, text).isZero();
      assertThat(r.inconclusiveReasons()).as("%s inconclusive\n%s", r.name(), text).isEmpty();
      assertThat(r.findings().messages()).as("%s committed messages", r.name()).isPositive();
    }
    Map<String, Integer> fired = new TreeMap<>();
    results.forEach(r -> r.faultsFired().forEach((k, v) -> fired.merge(k, v, Integer::sum)));
    for (String point : Scenario.allCrashPoints()) {
      assertThat(fired.getOrDefault(point, 0))
          .as("%s fired\n%s", point, text)
          .isGreaterThanOrEqualTo(2);
    }
    // the parking scenario really parked (and unparked) keys while the database failed
    ScenarioResult parking =
        results.stream().filter(r -> r.name().equals("parking")).findFirst().orElseThrow();
    assertThat(parking.findings().parked()).as("parked\n%s", text).isPositive();
    assertThat(parking.findings().unparked()).as("unparked\n%s", text).isPositive();
    // every fault of these scenarios, postgres-crash included (kill-active-relay is the CDC
    // campaign's: CdcQuickCampaignIT)
    for (Scenario.Fault f :
        Scenario.all().stream().flatMap(s -> s.external().stream()).distinct().toList()) {
      assertThat(fired.getOrDefault(f.kind, 0)).as("%s fired\n%s", f.kind, text).isPositive();
    }
    assertThat(report.exitCode()).isEqualTo(Report.OK);
  }
}
