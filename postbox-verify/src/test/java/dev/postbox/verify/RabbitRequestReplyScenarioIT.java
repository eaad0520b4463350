package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.testkit.RabbitMqServer;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The request-reply scenario on RabbitMQ, briefly ({@code ./postbox verify --transport rabbitmq
 * --scenarios request-reply} runs it longer), on its own private node: each responder crash point
 * and the requester's fired once (a crashed requester's reply queue goes with it; its open requests
 * are sent again to the new one), every request ended (answered once in effect, or timed out naming
 * itself), nothing applied twice. Skipped (fails in CI) without a RabbitMQ installation.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class RabbitRequestReplyScenarioIT {

  @Test
  void everyRequestEndsAndNoneIsAppliedTwiceThroughCrashes() throws Exception {
    RabbitMqServer.sharedOrSkip(); // only the skip: the scenario starts its own node
    Path dir = Path.of("target", "verify-it", "rr-rabbitmq-" + System.currentTimeMillis());
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    RequestReplyScenario.Result r =
        new RequestReplyScenario(20261201L, dir, out, true).run(150, 1, Duration.ofSeconds(60));
    RequestReplyScenario.print(r, out);
    String text = output.text();

    assertThat(r.transport()).isEqualTo("RabbitMQ");
    assertThat(r.done()).as(text).isTrue();
    assertThat(r.violations()).as(text).isZero();
    assertThat(r.inconclusive()).as(text).isFalse();
    assertThat(r.requests()).isEqualTo(150);
    for (String point : RequestReplyScenario.RESPONDER_POINTS) {
      assertThat(r.crashesFired().get(point)).as(point + "\n" + text).isEqualTo(1);
    }
    assertThat(r.crashesFired().get(RequestReplyScenario.REQUESTER_POINT)).isEqualTo(1);
    assertThat(r.sentAgain()).as("the requester's open requests sent again").isPositive();
    assertThat(r.answered() + r.timedOut()).isEqualTo(r.requests());
    assertThat(r.duplicateEffects()).isZero();
    assertThat(r.effects()).isLessThanOrEqualTo(r.requests()).isGreaterThanOrEqualTo(r.answered());
  }
}
