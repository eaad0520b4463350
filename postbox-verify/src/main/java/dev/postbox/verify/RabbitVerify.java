package dev.postbox.verify;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * {@code ./postbox verify --transport rabbitmq}: runs the {@link RabbitCampaign} with the command's
 * settings (seed, phase, rate, recovery bound, scenarios, directory) and reports like the Kafka
 * campaign (same table and JSON keys; scenario names start with {@value RabbitCampaign#PREFIX}).
 */
final class RabbitVerify {

  private RabbitVerify() {}

  /** The RabbitMQ campaign's settings from the command's; {@code quick}: a shorter phase. */
  static RabbitCampaign.Settings settings(Campaign.Settings s, boolean quick) {
    return settings(s, quick, false);
  }

  /** As {@link #settings(Campaign.Settings, boolean)}; {@code cluster}: on three nodes. */
  static RabbitCampaign.Settings settings(Campaign.Settings s, boolean quick, boolean cluster) {
    return new RabbitCampaign.Settings(
        s.seed(),
        quick ? Duration.ofSeconds(10) : s.phase(),
        s.rate(),
        s.recoveryBound(),
        s.dir().resolve("rabbitmq"),
        s.only(),
        s.minFires(),
        s.faultRate(),
        CampaignRounds.of(s),
        s.relay(),
        s.consumerMode(),
        cluster,
        cluster && s.asyncStandby());
  }

  /** The RabbitMQ campaign's {@code --quick} settings for {@code scenarios} (what CI runs). */
  static RabbitCampaign.Settings quick(long seed, Path dir, java.util.List<String> scenarios) {
    return quick(seed, dir, scenarios, RelayMode.IDEMPOTENT);
  }

  /** As {@link #quick(long, Path, List)}, with the relay processes running {@code relay}. */
  static RabbitCampaign.Settings quick(
      long seed, Path dir, java.util.List<String> scenarios, RelayMode relay) {
    return quick(seed, dir, scenarios, relay, ConsumerMode.INBOX, false);
  }

  /** As {@link #quick(long, Path, List, RelayMode)}; {@code cluster}: on three nodes. */
  static RabbitCampaign.Settings quick(
      long seed, Path dir, java.util.List<String> scenarios, RelayMode relay, boolean cluster) {
    return quick(seed, dir, scenarios, relay, ConsumerMode.INBOX, cluster);
  }

  /**
   * As {@link #quick(long, Path, List, RelayMode, boolean)}, with the consumers in {@code
   * consumers}.
   */
  static RabbitCampaign.Settings quick(
      long seed,
      Path dir,
      java.util.List<String> scenarios,
      RelayMode relay,
      ConsumerMode consumers,
      boolean cluster) {
    VerifyCli cli = new VerifyCli();
    cli.quick = true;
    cli.scenarios = java.util.List.copyOf(scenarios);
    cli.relay = relay.cliName();
    cli.consumerMode = consumers.cliName();
    return settings(cli.settings(seed, dir), true, cluster);
  }

  /** Runs it, prints and writes the report; returns the exit code. */
  static int run(
      Campaign.Settings s,
      boolean quick,
      boolean cluster,
      Instant started,
      Path reportJson,
      RunRecord record,
      PrintStream out)
      throws Exception {
    Optional<List<ScenarioResult>> results;
    try (RabbitCampaign campaign = new RabbitCampaign(settings(s, quick, cluster), out)) {
      results = campaign.run();
    }
    if (results.isEmpty()) {
      return Report.INCONCLUSIVE;
    }
    Report report =
        new Report(s.seed(), results.get(), started, Duration.between(started, Instant.now()))
            .withRecord(record, s.dir().resolve("rabbitmq").resolve("faults.log"));
    report.printText(out);
    report.writeJson(s.dir().resolve("rabbitmq").resolve("report.json"));
    if (reportJson != null) {
      report.writeJson(reportJson);
    }
    out.println("fault log and process logs: " + s.dir().resolve("rabbitmq").toAbsolutePath());
    return report.exitCode();
  }
}
