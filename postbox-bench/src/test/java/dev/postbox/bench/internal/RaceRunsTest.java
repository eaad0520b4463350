package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.postbox.bench.Measurement;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RaceRunsTest {

  private static RaceRuns.Run run(double rate) {
    return new RaceRuns.Run(rate, 100, rate, Map.of("total", 20.0));
  }

  @Test
  void thePairedRatioIsTheMedianOfEachRoundsRatioNotTheRatioOfTheMedians() {
    // the second round of ours ran quiet and the third of theirs busy: the medians' ratio is
    // 71,219 / 50,270 = 1.42x, the rounds' own ratios 1.22x, 1.20x and 1.73x
    RaceRuns.Run[] ours = {run(54_140), run(71_219), run(86_779)};
    RaceRuns.Run[] theirs = {run(44_425), run(59_264), run(50_270)};

    Measurement paired = RaceRuns.pairedRatio("paired", ours, theirs, "a note");

    assertThat(paired.value()).isCloseTo(54_140.0 / 44_425, within(1e-9));
    assertThat(paired.unit()).isEqualTo("x");
    assertThat(paired.note())
        .startsWith("a note; median of the 3 rounds' ratios [1.22, 1.20, 1.73], spread ");
  }

  @Test
  void unpairedRunsAreRefused() {
    RaceRuns.Run[] one = {run(1)};
    assertThatThrownBy(() -> RaceRuns.pairedRatio("p", one, new RaceRuns.Run[0], ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 against 0");
  }
}
