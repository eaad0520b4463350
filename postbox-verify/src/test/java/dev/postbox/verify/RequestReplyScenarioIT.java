package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The request-reply scenario, briefly ({@code ./postbox verify --scenarios request-reply} runs it
 * longer), on a PostgreSQL primary with a synchronous standby failed over once while requests flow
 * (as {@code --cluster --scenarios request-reply} does): each responder crash point and the
 * requester's fired once, the failover too, every request ended (answered once in effect, or timed
 * out naming itself), nothing applied twice. On one server it runs in {@code
 * RabbitRequestReplyScenarioIT}.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class RequestReplyScenarioIT {

  @Test
  void everyRequestEndsAndNoneIsAppliedTwiceThroughCrashesAndAFailover() throws Exception {
    Path dir = Path.of("target", "verify-it", "rr-" + System.currentTimeMillis());
    CampaignOutput output = new CampaignOutput();
    PrintStream out = output.out();
    RequestReplyScenario.Result r =
        new RequestReplyScenario(20261201L, dir, out)
            .failovers(1)
            .run(150, 1, Duration.ofSeconds(60));
    RequestReplyScenario.print(r, out);
    String text = output.text();

    assertThat(r.done()).as(text).isTrue();
    assertThat(r.violations()).as(text).isZero();
    assertThat(r.inconclusive()).as(text).isFalse();
    assertThat(r.requests()).isEqualTo(150);
    for (String point : RequestReplyScenario.RESPONDER_POINTS) {
      assertThat(r.crashesFired().get(point)).as(point + "\n" + text).isEqualTo(1);
    }
    assertThat(r.crashesFired().get(RequestReplyScenario.REQUESTER_POINT)).isEqualTo(1);
    assertThat(r.crashesFired().get(RequestReplyScenario.FAILOVER)).as(text).isEqualTo(1);
    assertThat(r.sentAgain()).as("the requester's open requests sent again").isPositive();
    assertThat(r.answered() + r.timedOut()).isEqualTo(r.requests());
    assertThat(r.duplicateEffects()).isZero();
    assertThat(r.effects()).isLessThanOrEqualTo(r.requests()).isGreaterThanOrEqualTo(r.answered());
  }
}
