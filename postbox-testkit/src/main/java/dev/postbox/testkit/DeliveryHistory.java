package dev.postbox.testkit;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks a delivery history against what was committed: nothing lost, duplicates counted, per-key
 * order kept.
 *
 * <p>Record what committed with {@link #committed(String, long, String)} (key, the key's sequence
 * number in commit order, message id), then what was observed (on a topic, or applied by a
 * consumer) in observation order with {@link #observed(String, long, String)}. Order is judged on
 * first occurrences: a redelivered duplicate of an old message does not count as an order violation
 * (it is counted as a duplicate), but a message seen for the first time after a later message of
 * its key is a violation.
 *
 * <p>Not thread-safe: record from one thread, or synchronise.
 */
public final class DeliveryHistory {

  private final Map<String, TreeMap<Long, String>> committed = new HashMap<>();
  private final Set<String> committedIds = new HashSet<>();
  private final Map<String, Long> lastFirstSeen = new HashMap<>();
  private final Set<String> seenIds = new HashSet<>();
  private long observed;
  private long duplicates;
  private long orderViolations;
  private long unexpected;

  /**
   * Records a committed message: {@code seq} is its position among its key's commits (1, 2, 3...).
   */
  public void committed(String key, long seq, String id) {
    Objects.requireNonNull(key, "key");
    committed.computeIfAbsent(key, k -> new TreeMap<>()).put(seq, id);
    committedIds.add(id);
  }

  /** Records an observed message (in the order observed). */
  public void observed(String key, long seq, String id) {
    observed++;
    if (!seenIds.add(id)) {
      duplicates++;
      return;
    }
    if (!committedIds.contains(id)) {
      unexpected++;
    }
    Long last = lastFirstSeen.get(key);
    if (last != null && seq <= last) {
      orderViolations++;
    }
    lastFirstSeen.merge(key, seq, Math::max);
  }

  /** Number of distinct committed messages. */
  public long committedCount() {
    return committedIds.size();
  }

  /** The summary. */
  public Report report() {
    long missing = committedIds.stream().filter(id -> !seenIds.contains(id)).count();
    List<String> sample =
        committedIds.stream().filter(id -> !seenIds.contains(id)).limit(10).toList();
    return new Report(
        committedIds.size(),
        observed,
        seenIds.size(),
        missing,
        duplicates,
        orderViolations,
        unexpected,
        sample);
  }

  /**
   * The outcome of a history check.
   *
   * @param committed distinct messages committed
   * @param observed messages observed, duplicates included
   * @param distinctObserved distinct messages observed
   * @param missing committed but never observed
   * @param duplicates observations of an id already observed
   * @param orderViolations first observations that came after a later message of the same key
   * @param unexpected observed ids that were never committed (for example, from a rolled-back
   *     transaction)
   * @param missingSample up to ten missing ids
   */
  public record Report(
      long committed,
      long observed,
      long distinctObserved,
      long missing,
      long duplicates,
      long orderViolations,
      long unexpected,
      List<String> missingSample) {

    /** Whether nothing was lost, nothing unexpected appeared and per-key order held. */
    public boolean ok() {
      return missing == 0 && orderViolations == 0 && unexpected == 0;
    }
  }
}
