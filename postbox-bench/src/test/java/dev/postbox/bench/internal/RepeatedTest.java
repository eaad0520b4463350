package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.bench.Measurement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Interleaved figures take turns round by round, each with its own median and runs. */
class RepeatedTest {

  @Test
  void interleavedFiguresTakeTurnsAndKeepTheirOwnMedians() throws Exception {
    List<String> calls = new ArrayList<>();
    List<Measurement> m =
        Repeated.interleaved(
            List.of("a", "b"),
            "events/s",
            3,
            List.of(
                round -> {
                  calls.add("a" + round);
                  return new Repeated.Run(10 * (round + 1), "a runs");
                },
                round -> {
                  calls.add("b" + round);
                  return new Repeated.Run(100 - round, "b runs");
                }));
    assertThat(calls).containsExactly("a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3");
    assertThat(m).extracting(Measurement::name).containsExactly("a", "b");
    assertThat(m.get(0).value()).isEqualTo(30.0); // runs 20, 30, 40
    assertThat(m.get(1).value()).isEqualTo(98.0); // runs 99, 98, 97
    assertThat(m.get(0).note()).contains("[20, 30, 40]", "interleaved with b");
    assertThat(m.get(1).note()).contains("[99, 98, 97]", "interleaved with a");
  }

  @Test
  void theSpreadANoteStatesReadsBackAndASingleRunHasNone() throws Exception {
    double[] rates = {80, 100, 90, 60};
    Measurement m =
        Repeated.median("r", "events/s", 3, round -> new Repeated.Run(rates[round], "drained"));
    assertThat(m.value()).isEqualTo(90.0);
    assertThat(Repeated.spread(m.note())).hasValue(0.44); // (100 - 60) / 90, as the note rounds it
    assertThat(
            Repeated.interleaved(
                    List.of("a"), "x", 3, List.of(round -> new Repeated.Run(rates[round], "a")))
                .get(0)
                .note())
        .satisfies(note -> assertThat(Repeated.spread(note)).hasValue(0.44));
    Measurement one =
        Repeated.median("r", "events/s", 1, round -> new Repeated.Run(rates[round], "drained"));
    assertThat(Repeated.spread(one.note())).isEmpty();
  }
}
