package dev.postbox.verify;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code redis-window} scenario's verdict from the outside target's record of effects. Pure: no
 * I/O, so each kind has a test that plants it.
 *
 * <p>Per message id, in the order the target saw them: a second effect after an effect by an
 * incarnation that crashed (halted between the effect and marking the idempotency key complete) is
 * the window's measured cost; after an incarnation that did not crash it is an <b>unexplained
 * duplicate</b> (deduplication failed). A published id without an effect is <b>lost</b>, and an
 * effect of an id never published is <b>unexpected</b>; each is counted by itself, so one cannot
 * hide the other.
 */
final class RedisWindowCheck {

  private RedisWindowCheck() {}

  /**
   * One effect the target recorded: the message id and the consumer incarnation that applied it.
   */
  record Effect(String messageId, int incarnation) {}

  /** What the check counted. */
  record Tally(long windowDuplicates, long unexplainedDuplicates, long lost, long unexpected) {

    /** The counts that must be 0. */
    long violations() {
      return unexplainedDuplicates + lost + unexpected;
    }
  }

  /**
   * Checks {@code effects} (in the order the target saw them) against the {@code published} ids,
   * given the incarnations that {@code crashed} at the crash point.
   */
  static Tally check(Set<String> published, List<Effect> effects, Set<Integer> crashed) {
    Map<String, List<Integer>> byId = new HashMap<>();
    for (Effect e : effects) {
      byId.computeIfAbsent(e.messageId(), k -> new ArrayList<>()).add(e.incarnation());
    }
    long window = 0;
    long unexplained = 0;
    long unexpected = 0;
    for (Map.Entry<String, List<Integer>> e : byId.entrySet()) {
      if (!published.contains(e.getKey())) {
        unexpected += e.getValue().size();
        continue;
      }
      List<Integer> incarnations = e.getValue();
      for (int i = 1; i < incarnations.size(); i++) {
        if (crashed.contains(incarnations.get(i - 1))) {
          window++;
        } else {
          unexplained++;
        }
      }
    }
    long lost = published.stream().filter(id -> !byId.containsKey(id)).count();
    return new Tally(window, unexplained, lost, unexpected);
  }
}
