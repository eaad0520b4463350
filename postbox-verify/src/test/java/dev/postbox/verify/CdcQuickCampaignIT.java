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
 * {@code ./postbox verify --quick --relay cdc}, one short round of the CDC relay's scenarios: its
 * crash points (after the broker's ack before the mark and the slot confirm, and the same inside a
 * multi-event transaction) each fired, kill -9 of the streaming relay mid-stream (a standby takes
 * over), SIGSTOP of the streaming relay past its slot lease, PostgreSQL restarts, crashes and
 * killed sessions; zero lost, zero per-key order violations, no dead letter, no duplicate effect,
 * nothing inconclusive. Duplicates on the topic are measured (printed), not bounded.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 40, unit = TimeUnit.MINUTES)
class CdcQuickCampaignIT {

  @Test
  void cdcCampaignLosesNothingAndKeepsPerKeyOrderThroughEveryFault() throws Exception {
    long seed = 20261201L;
    Path dir = Path.of("target", "verify-it-cdc", Long.toString(System.currentTimeMillis()));
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    VerifyCli cli = new VerifyCli();
    cli.quick = true;
    cli.relay = "cdc";
    cli.phaseSeconds = 15;
    // kill-9 of any process is left out: on a loaded CI machine its producers rarely commit between
    // kills (inconclusive); standby-takeover kills the streaming relay mid-stream
    cli.scenarios = List.of("cdc-crash-points", "standby-takeover", "pauses", "postgres-restart");
    Instant started = Instant.now();
    List<ScenarioResult> results;
    try (Campaign campaign = new Campaign(cli.settings(seed, dir), out)) {
      results = campaign.run();
    }
    Report report = new Report(seed, results, started, Duration.between(started, Instant.now()));
    report.printText(out);
    report.writeJson(dir.resolve("report.json"));
    String text = output.text();

    assertThat(results)
        .extracting(ScenarioResult::name)
        .containsExactly("cdc-crash-points", "standby-takeover", "pauses", "postgres-restart");
    for (ScenarioResult r : results) {
      assertThat(r.findings().lost()).as("lost in %s\n%s", r.name(), text).isZero();
      assertThat(r.findings().orderViolations()).as("order in %s\n%s", r.name(), text).isZero();
      assertThat(r.violations()).as("violations in %s; see %s\n%s", r.name(), dir, text).isZero();
      assertThat(r.inconclusiveReasons()).as("%s inconclusive\n%s", r.name(), text).isEmpty();
      assertThat(r.findings().messages()).as("%s committed messages", r.name()).isPositive();
    }
    Map<String, Integer> fired = new TreeMap<>();
    results.forEach(r -> r.faultsFired().forEach((k, v) -> fired.merge(k, v, Integer::sum)));
    // each at least once (the scenario goes on until each fired twice or its time is up: on a
    // loaded 2-core machine a relay JVM takes ~20 s to restart, and only the streaming one fires)
    for (String point : Scenario.CDC_POINTS) {
      assertThat(fired.getOrDefault(point, 0)).as("%s fired\n%s", point, text).isPositive();
    }
    for (Scenario.Fault f :
        Scenario.cdc().stream()
            .filter(s -> cli.scenarios.contains(s.name()))
            .flatMap(s -> s.external().stream())
            .distinct()
            .toList()) {
      assertThat(fired.getOrDefault(f.kind, 0)).as("%s fired\n%s", f.kind, text).isPositive();
    }
    assertThat(report.exitCode()).isEqualTo(Report.OK);
  }
}
