package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The campaign's fault rate and time box: validated, applied, kept when scenarios are chosen. */
class CampaignSettingsTest {

  private static Campaign.Settings settings(double faultRate, Duration timeBox) {
    return new Campaign.Settings(
        7,
        Duration.ofSeconds(25),
        1,
        0,
        Duration.ofSeconds(120),
        40,
        List.of(),
        Path.of("target", "x"),
        1,
        RelayMode.IDEMPOTENT,
        ConsumerMode.INBOX,
        faultRate,
        timeBox,
        false,
        false);
  }

  @Test
  void theFaultRateDividesTheWaitBetweenExternalFaults() {
    assertThat(settings(1, Duration.ZERO).spaced(1_000)).isEqualTo(1_000);
    assertThat(settings(2.5, Duration.ZERO).spaced(1_000)).isEqualTo(400);
    assertThat(settings(0.5, Duration.ZERO).spaced(1_000)).isEqualTo(2_000);
  }

  @Test
  void aFaultRateOutsideItsRangeIsRefused() {
    for (double bad : new double[] {0, -1, 10.5, Double.NaN, Double.POSITIVE_INFINITY}) {
      assertThatThrownBy(() -> settings(bad, Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("fault rate");
    }
    assertThatThrownBy(() -> settings(1, Duration.ofMinutes(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("time box");
  }

  @Test
  void theTimeBoxRunsOutOnlyWhenSetAndReached() {
    long anHour = Duration.ofHours(1).toNanos();
    assertThat(new CampaignRounds(1, 0, Duration.ZERO).outOfTime(0, anHour)).isFalse();
    assertThat(new CampaignRounds(1, 0, Duration.ofMinutes(30)).outOfTime(0, anHour)).isTrue();
    assertThat(new CampaignRounds(1, 0, Duration.ofMinutes(90)).outOfTime(0, anHour)).isFalse();
  }

  /** A scenario round that fired {@code injections} faults and found nothing. */
  private static ScenarioResult fired(String name, int injections) {
    Findings none = Findings.builder().messages(10).build();
    return new ScenarioResult(
        name, 1, injections, Map.of("kill-9", injections), Map.of(), none, 5, false, 0, List.of());
  }

  @Test
  void roundsGoOnUntilTheTargetAndMergeEachScenariosRounds() throws Exception {
    List<String> ran = new ArrayList<>();
    List<ScenarioResult> results =
        new CampaignRounds(1, 25, Duration.ZERO)
            .run(
                List.of("a", "b"),
                n -> n,
                (s, round) -> {
                  ran.add(s + round);
                  return fired(s, s.equals("a") ? 4 : 2);
                },
                new PrintStream(OutputStream.nullOutputStream()),
                sofar -> {});
    // 6 faults a round: the target of 25 is passed in round 5
    assertThat(ran).containsExactly("a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4", "a5", "b5");
    assertThat(results).extracting(ScenarioResult::name).containsExactly("a", "b");
    assertThat(results.get(0).rounds()).isEqualTo(5);
    assertThat(results.get(0).injections()).isEqualTo(20);
    assertThat(results.get(1).faultsFired()).containsEntry("kill-9", 10);
  }

  @Test
  void aRoundThatInjectsNothingEndsTheCampaignAndATimeBoxStopsItBeforeTheNextScenario()
      throws Exception {
    List<String> ran = new ArrayList<>();
    new CampaignRounds(1, 1_000, Duration.ZERO)
        .run(
            List.of("a"),
            n -> n,
            (s, round) -> {
              ran.add(s + round);
              return fired(s, round == 1 ? 3 : 0);
            },
            new PrintStream(OutputStream.nullOutputStream()),
            sofar -> {});
    assertThat(ran).containsExactly("a1", "a2");
    ran.clear();
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    AtomicLong now = new AtomicLong();
    List<ScenarioResult> partial =
        new CampaignRounds(3, 0, Duration.ofMinutes(10), now::get)
            .run(
                List.of("a", "b"),
                n -> n,
                (s, round) -> {
                  ran.add(s + round);
                  now.addAndGet(Duration.ofMinutes(s.equals("a") ? 4 : 5).toNanos());
                  return fired(s, 1);
                },
                new PrintStream(printed, true, StandardCharsets.UTF_8),
                sofar -> {});
    // a1 at 0, b1 at 4 min, a2 at 9 min; at 13 min the 10 min box has run out
    assertThat(ran).containsExactly("a1", "b1", "a2");
    assertThat(partial).extracting(ScenarioResult::rounds).containsExactly(2, 1);
    assertThat(printed.toString(StandardCharsets.UTF_8))
        .contains("time box of 10 min reached; stopping before b round 2");
  }

  @Test
  void choosingScenariosKeepsEveryOtherSetting() {
    Campaign.Settings s = settings(3, Duration.ofMinutes(60));
    Campaign.Settings only = s.withOnly(List.of("mixed"));
    assertThat(only.only()).containsExactly("mixed");
    assertThat(only.withOnly(s.only())).isEqualTo(s);
  }

  @Test
  void theCommandLineTakesBothAndRefusesBadValuesBeforeStartingAnything() {
    VerifyCli cli = new VerifyCli();
    new CommandLine(cli).parseArgs("--fault-rate", "3", "--max-minutes", "70");
    Campaign.Settings s = cli.settings(1, Path.of("target", "x"));
    assertThat(s.faultRate()).isEqualTo(3);
    assertThat(s.timeBox()).isEqualTo(Duration.ofMinutes(70));
    assertThat(new VerifyCli().settings(1, Path.of("target", "x")).timeBox()).isZero();
    for (String[] bad :
        List.of(
            new String[] {"--fault-rate", "0"},
            new String[] {"--fault-rate", "11"},
            new String[] {"--max-minutes", "0"},
            new String[] {"--transport", "rabbitmq", "--relay", "transactional"})) {
      StringWriter err = new StringWriter();
      int code = new CommandLine(new VerifyCli()).setErr(new PrintWriter(err)).execute(bad);
      assertThat(code).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(err.toString()).contains(bad[0]);
    }
  }
}
