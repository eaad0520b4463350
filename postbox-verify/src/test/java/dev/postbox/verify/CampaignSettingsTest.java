package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
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
        timeBox);
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
    long anHourAgo = System.nanoTime() - Duration.ofHours(1).toNanos();
    assertThat(settings(1, Duration.ZERO).outOfTime(anHourAgo)).isFalse();
    assertThat(settings(1, Duration.ofMinutes(30)).outOfTime(anHourAgo)).isTrue();
    assertThat(settings(1, Duration.ofMinutes(90)).outOfTime(anHourAgo)).isFalse();
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
            new String[] {"--max-minutes", "0"})) {
      StringWriter err = new StringWriter();
      int code = new CommandLine(new VerifyCli()).setErr(new PrintWriter(err)).execute(bad);
      assertThat(code).as(String.join(" ", bad)).isEqualTo(2);
      assertThat(err.toString()).contains(bad[0]);
    }
  }
}
