package dev.postbox.core.engine;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which shards each live member of a group should hold: a pure function of the shard count, the
 * live members and who holds what now, so that every member computes the same answer from the same
 * view.
 *
 * <p>Members are ranked by id; each gets {@code shards / n} shards, the first {@code shards % n}
 * one more. A member keeps the shards it holds up to its share (the lowest first), so a join or a
 * leave moves only the shards it must; the shards left over (free, held by a member that is gone,
 * or above a member's share) go, lowest first, to the members below their share, in rank order.
 */
public final class ShardAssignment {

  private ShardAssignment() {}

  /**
   * The shards {@code me} should hold.
   *
   * @param shards the group's shard count (shards are {@code 0..shards-1})
   * @param members the live members ({@code me} is counted as live whether listed or not)
   * @param holders who holds which shard now (shards of members not live count as free)
   */
  public static Set<Integer> of(
      int shards, Collection<String> members, Map<Integer, String> holders, String me) {
    return plan(shards, members, holders, me).getOrDefault(me, new TreeSet<>());
  }

  /** The whole plan: each live member (and {@code me}) with the shards it should hold. */
  public static Map<String, Set<Integer>> plan(
      int shards, Collection<String> members, Map<Integer, String> holders, String me) {
    if (shards < 1) {
      throw new IllegalArgumentException("shards must be at least 1, was " + shards);
    }
    TreeSet<String> ranked = new TreeSet<>(members);
    ranked.add(me);
    List<String> order = new ArrayList<>(ranked);
    int n = order.size();
    Map<String, Integer> quota = new HashMap<>();
    Map<String, Set<Integer>> plan = new HashMap<>();
    for (int rank = 0; rank < n; rank++) {
      quota.put(order.get(rank), shards / n + (rank < shards % n ? 1 : 0));
      plan.put(order.get(rank), new TreeSet<>());
    }
    TreeSet<Integer> left = new TreeSet<>();
    for (int shard = 0; shard < shards; shard++) {
      String holder = holders.get(shard);
      Set<Integer> kept = holder == null ? null : plan.get(holder);
      if (kept != null && kept.size() < quota.get(holder)) {
        kept.add(shard);
      } else {
        left.add(shard);
      }
    }
    for (String member : order) {
      Set<Integer> mine = plan.get(member);
      while (mine.size() < quota.get(member) && !left.isEmpty()) {
        mine.add(left.pollFirst());
      }
    }
    return plan;
  }
}
