package dev.postbox.verify;

import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * The {@code transform} scenario's verdict from what the harness wrote and what it read back
 * (outputs read {@code read_committed}, the transformers' dead letters). Pure: no I/O, so each
 * violation kind has a test that plants it.
 *
 * <p>Each expected output (a non-poison input and an output index below {@code outputsPerInput}) is
 * counted present or lost by itself: an output the harness never expects (an unknown input, or an
 * index out of range) is counted as unexpected, never as standing in for a lost one.
 */
final class TransformCheck {

  private TransformCheck() {}

  /** One input the harness wrote. */
  record Input(String key, long seq, boolean poison) {}

  /** One output read back, at its partition and offset. */
  record Output(int partition, long offset, String key, UUID input, long seq, int idx) {}

  /** What the check counted. */
  record Tally(
      long outputsExpected,
      long outputsCommitted,
      long lost,
      long duplicateOutputs,
      long unexpectedOutputs,
      long orderViolations,
      long poison,
      long poisonDeadLettered,
      long poisonWithOutput,
      long duplicateDeadLetters,
      long otherDeadLetters) {

    /** Every count that must be 0 for the scenario to pass. */
    long violations() {
      return lost
          + duplicateOutputs
          + unexpectedOutputs
          + orderViolations
          + (poison - poisonDeadLettered)
          + poisonWithOutput
          + duplicateDeadLetters
          + otherDeadLetters;
    }
  }

  /**
   * Checks {@code committed} outputs and dead letters {@code letters} (message ids, one per letter)
   * against the inputs {@code written}, each non-poison input expected to give {@code
   * outputsPerInput} outputs, per key in increasing (input sequence, output index) order along its
   * partition.
   */
  static Tally check(
      Map<UUID, Input> written, int outputsPerInput, List<Output> committed, List<UUID> letters) {
    Map<String, Integer> copies = new HashMap<>();
    long poisonWithOutput = 0;
    long unexpected = 0;
    long order = 0;
    Map<String, long[]> last = new HashMap<>(); // key -> highest (seq, idx) seen so far
    List<Output> sorted =
        committed.stream()
            .sorted(Comparator.comparingInt(Output::partition).thenComparingLong(Output::offset))
            .toList();
    for (Output o : sorted) {
      Input i = written.get(o.input());
      if (i == null || o.idx() < 0 || o.idx() >= outputsPerInput) {
        unexpected++;
        continue;
      }
      if (i.poison()) {
        poisonWithOutput++;
        continue;
      }
      copies.merge(o.input() + "/" + o.idx(), 1, Integer::sum);
      long[] l = last.get(o.key());
      if (l != null && (o.seq() < l[0] || (o.seq() == l[0] && o.idx() < l[1]))) {
        order++;
      }
      if (l == null || o.seq() > l[0] || (o.seq() == l[0] && o.idx() > l[1])) {
        last.put(o.key(), new long[] {o.seq(), o.idx()});
      }
    }
    long expected = 0;
    long lost = 0;
    for (Map.Entry<UUID, Input> e : written.entrySet()) {
      if (e.getValue().poison()) {
        continue;
      }
      for (int idx = 0; idx < outputsPerInput; idx++) {
        expected++;
        if (!copies.containsKey(e.getKey() + "/" + idx)) {
          lost++;
        }
      }
    }
    long duplicates = copies.values().stream().mapToLong(n -> n - 1).sum();
    Set<UUID> poisonLettered = new HashSet<>();
    long duplicateLetters = 0;
    long otherLetters = 0;
    for (UUID id : letters) {
      Input i = id == null ? null : written.get(id);
      if (i == null || !i.poison()) {
        otherLetters++;
      } else if (!poisonLettered.add(id)) {
        duplicateLetters++;
      }
    }
    return new Tally(
        expected,
        committed.size(),
        lost,
        duplicates,
        unexpected,
        order,
        written.values().stream().filter(Input::poison).count(),
        poisonLettered.size(),
        poisonWithOutput,
        duplicateLetters,
        otherLetters);
  }
}
