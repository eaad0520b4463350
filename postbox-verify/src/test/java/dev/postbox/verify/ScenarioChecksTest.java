package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.verify.RedisWindowCheck.Effect;
import dev.postbox.verify.TransformCheck.Input;
import dev.postbox.verify.TransformCheck.Output;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The transform and redis-window checkers on planted histories (no infrastructure): each violation
 * kind is counted, a clean history passes, and one kind cannot hide another (an unexpected output
 * or effect never stands in for a lost one).
 */
class ScenarioChecksTest {

  private static final int OUTPUTS = 2;

  // --- transform ---

  private final Map<UUID, Input> written = new LinkedHashMap<>();
  private final List<Output> outputs = new ArrayList<>();
  private final List<UUID> letters = new ArrayList<>();
  private long offset;

  private UUID input(String key, long seq, boolean poison) {
    UUID id = UUID.randomUUID();
    written.put(id, new Input(key, seq, poison));
    return id;
  }

  private void output(UUID input, int idx) {
    Input i = written.get(input);
    outputs.add(
        new Output(0, offset++, i == null ? "x" : i.key(), input, i == null ? 0 : i.seq(), idx));
  }

  private void allOutputs(UUID input) {
    for (int idx = 0; idx < OUTPUTS; idx++) {
      output(input, idx);
    }
  }

  /** Three keyed inputs with all their outputs in order, one poison input dead-lettered. */
  private UUID[] clean() {
    UUID a1 = input("a", 1, false);
    UUID a2 = input("a", 2, false);
    UUID b1 = input("b", 1, false);
    UUID poison = input("b", 2, true);
    allOutputs(a1);
    allOutputs(b1);
    allOutputs(a2);
    letters.add(poison);
    return new UUID[] {a1, a2, b1, poison};
  }

  private TransformCheck.Tally transform() {
    return TransformCheck.check(written, OUTPUTS, outputs, letters);
  }

  @Test
  void aCleanTransformHistoryPasses() {
    clean();
    TransformCheck.Tally t = transform();
    assertThat(t.outputsExpected()).isEqualTo(6);
    assertThat(t.outputsCommitted()).isEqualTo(6);
    assertThat(t.poisonDeadLettered()).isEqualTo(1);
    assertThat(t.violations()).isZero();
  }

  @Test
  void aLostOutputIsCountedEvenWhenAnUnexpectedOneMakesTheCountsAgree() {
    UUID[] ids = clean();
    outputs.removeIf(o -> o.input().equals(ids[1]) && o.idx() == 1); // a2's second output lost
    output(ids[2], OUTPUTS); // an index the transformer never makes: the total is 6 again
    TransformCheck.Tally t = transform();
    assertThat(t.outputsCommitted()).isEqualTo(t.outputsExpected());
    assertThat(t.lost()).isEqualTo(1);
    assertThat(t.unexpectedOutputs()).isEqualTo(1);
    assertThat(t.violations()).isEqualTo(2);
  }

  @Test
  void eachTransformViolationKindIsCounted() {
    UUID[] ids = clean();
    output(ids[0], 0); // a duplicate output (and, after a2's, an order violation of key a)
    output(UUID.randomUUID(), 0); // an output of an input never written
    output(ids[3], 0); // an output of the poison input
    letters.add(ids[3]); // the poison input dead-lettered twice
    letters.add(ids[1]); // a good input dead-lettered
    TransformCheck.Tally t = transform();
    assertThat(t.duplicateOutputs()).isEqualTo(1);
    assertThat(t.orderViolations()).isEqualTo(1);
    assertThat(t.unexpectedOutputs()).isEqualTo(1);
    assertThat(t.poisonWithOutput()).isEqualTo(1);
    assertThat(t.duplicateDeadLetters()).isEqualTo(1);
    assertThat(t.otherDeadLetters()).isEqualTo(1);
    assertThat(t.lost()).isZero();
    assertThat(t.violations()).isEqualTo(6);
  }

  @Test
  void aPoisonInputNotDeadLetteredIsAViolation() {
    clean();
    letters.clear();
    TransformCheck.Tally t = transform();
    assertThat(t.poison() - t.poisonDeadLettered()).isEqualTo(1);
    assertThat(t.violations()).isEqualTo(1);
  }

  @Test
  void outputsOutOfOrderWithinAKeyAreCounted() {
    UUID a1 = input("a", 1, false);
    UUID a2 = input("a", 2, false);
    output(a1, 0);
    output(a2, 0);
    output(a1, 1); // a1's second output after a2's first
    output(a2, 1);
    TransformCheck.Tally t = transform();
    assertThat(t.orderViolations()).isEqualTo(1);
    assertThat(t.lost()).isZero();
    assertThat(t.duplicateOutputs()).isZero();
  }

  // --- redis-window ---

  @Test
  void aRepeatAfterACrashedIncarnationIsTheWindowNotAViolation() {
    RedisWindowCheck.Tally t =
        RedisWindowCheck.check(
            Set.of("m1", "m2"),
            List.of(new Effect("m1", 1), new Effect("m1", 2), new Effect("m2", 2)),
            Set.of(1));
    assertThat(t.windowDuplicates()).isEqualTo(1);
    assertThat(t.violations()).isZero();
  }

  @Test
  void aRepeatAfterAnIncarnationThatDidNotCrashIsAnUnexplainedDuplicate() {
    RedisWindowCheck.Tally t =
        RedisWindowCheck.check(
            Set.of("m1"), List.of(new Effect("m1", 2), new Effect("m1", 3)), Set.of(1));
    assertThat(t.unexplainedDuplicates()).isEqualTo(1);
    assertThat(t.windowDuplicates()).isZero();
    assertThat(t.violations()).isEqualTo(1);
  }

  @Test
  void aLostMessageIsCountedEvenWhenAnUnpublishedIdTookItsPlace() {
    RedisWindowCheck.Tally t =
        RedisWindowCheck.check(
            Set.of("m1", "m2"), List.of(new Effect("m1", 1), new Effect("phantom", 1)), Set.of());
    assertThat(t.lost()).isEqualTo(1);
    assertThat(t.unexpected()).isEqualTo(1);
    assertThat(t.violations()).isEqualTo(2);
  }

  /** A redis-window result: 100 messages, 110 records, 5 armed, {@code fired} crashes. */
  private static RedisWindow.Result window(
      int fired, long unexplained, long lost, long unexpected, boolean drained) {
    return new RedisWindow.Result(
        100, 110, 5, fired, 104, 3, unexplained, lost, unexpected, 2, 10, drained, 0);
  }

  @Test
  void theRedisWindowsRunReportCountsItsCrashesAndPassesWithOnlyWindowDuplicates() {
    ScenarioResult r = RedisWindow.asScenario(window(4, 0, 0, 0, true));
    assertThat(r.violations()).isZero();
    assertThat(r.inconclusive()).isFalse();
    assertThat(r.injections()).isEqualTo(4);
    assertThat(r.faultsFired()).containsEntry(RedisWindow.POINT, 4);
    assertThat(r.faultsNotFired()).containsEntry(RedisWindow.POINT, 1);
    assertThat(r.findings().topicDuplicates()).isEqualTo(10);
  }

  @Test
  void theRedisWindowsRunReportIsAViolationForEachPlantedKindAndInconclusiveWithoutACrash() {
    assertThat(RedisWindow.asScenario(window(4, 1, 0, 0, true)).violations()).isEqualTo(1);
    assertThat(RedisWindow.asScenario(window(4, 0, 2, 0, true)).violations()).isEqualTo(2);
    assertThat(RedisWindow.asScenario(window(4, 0, 0, 1, true)).violations()).isEqualTo(1);
    assertThat(RedisWindow.asScenario(window(4, 0, 0, 0, false)).violations()).isEqualTo(1);
    ScenarioResult none = RedisWindow.asScenario(window(0, 0, 0, 0, true));
    assertThat(none.inconclusive()).isTrue();
    assertThat(none.violations()).isZero();
  }
}
