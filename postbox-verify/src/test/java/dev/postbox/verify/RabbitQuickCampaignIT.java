package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.testkit.RabbitMqServer;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The quick campaign's RabbitMQ part (what CI runs of {@code ./postbox verify --transport
 * rabbitmq}): the consumer crash points (after the inbox insert; after the effect committed, before
 * the ack) and {@code kill -9} of consumers and relays, each one short phase, on a private RabbitMQ
 * node; zero lost, zero dead-lettered, zero duplicate effects, per-key order kept, and every
 * scheduled fault fired. The other scenarios (relay crash points, pauses past the heartbeat,
 * dropped connections, broker kill) run in {@code ./postbox verify --transport rabbitmq}. Skipped
 * without RabbitMQ outside CI.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 40, unit = TimeUnit.MINUTES)
class RabbitQuickCampaignIT {

  @Test
  void rabbitQuickCampaignHoldsEveryGuarantee() throws Exception {
    runAndCheck(
        RelayMode.IDEMPOTENT,
        List.of("consumer-crash-points", "kill-9"),
        List.of("rabbitmq-consumer-crash-points", "rabbitmq-kill-9"));
  }

  /**
   * The CDC relay publishing to RabbitMQ ({@code --relay cdc}): its crash points (after the
   * broker's confirms before the mark; a batch ending inside a multi-event transaction) fire in the
   * active streamer, a standby or the restarted process takes the slot over, and the consumers
   * still apply each message once, in key order.
   */
  @Test
  void theCdcRelayOnRabbitMqHoldsEveryGuaranteeThroughItsCrashPoints() throws Exception {
    runAndCheck(RelayMode.CDC, List.of("cdc-crash-points"), List.of("rabbitmq-cdc-crash-points"));
  }

  /**
   * Three instances sharing the shard queues through leases in PostgreSQL ({@code --consumer-mode
   * shard-leases}): an instance leaves and joins again mid-stream, and an active one is frozen past
   * its lease and its heartbeat, so its shards move to the others while its handler may still
   * commit late; each message applied once, in key order, nothing lost, and more than one instance
   * applied messages in each round (the round is inconclusive otherwise).
   */
  @Test
  void consumersSharingShardsByLeaseHoldEveryGuaranteeAsInstancesLeaveFreezeAndRejoin()
      throws Exception {
    runAndCheck(
        RelayMode.IDEMPOTENT,
        ConsumerMode.SHARD_LEASES,
        List.of("scaling", "pauses"),
        List.of("rabbitmq-pauses", "rabbitmq-scaling"));
  }

  private static void runAndCheck(RelayMode relay, List<String> scenarios, List<String> names)
      throws Exception {
    runAndCheck(relay, ConsumerMode.INBOX, scenarios, names);
  }

  private static void runAndCheck(
      RelayMode relay, ConsumerMode consumers, List<String> scenarios, List<String> names)
      throws Exception {
    RabbitMqServer rabbit = RabbitMqServer.sharedOrSkip(); // skips (fails in CI) without one
    long seed = 20261201L;
    Path dir = Path.of("target", "verify-rabbit-it", Long.toString(System.currentTimeMillis()));
    RabbitCampaign.Settings settings =
        RabbitVerify.quick(seed, dir, scenarios, relay, consumers, false);
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    Optional<List<ScenarioResult>> results;
    try (RabbitCampaign campaign = new RabbitCampaign(settings, out, rabbit)) {
      results = campaign.run();
    }
    String text = output.text();
    assertThat(results).as(text).isPresent();
    assertThat(results.get()).extracting(ScenarioResult::name).containsExactlyElementsOf(names);
    for (ScenarioResult r : results.get()) {
      assertThat(r.violations()).as("violations in %s; see %s\n%s", r.name(), dir, text).isZero();
      assertThat(r.inconclusiveReasons()).as("%s inconclusive\n%s", r.name(), text).isEmpty();
      assertThat(r.findings().messages()).as("%s messages", r.name()).isPositive();
    }
  }
}
