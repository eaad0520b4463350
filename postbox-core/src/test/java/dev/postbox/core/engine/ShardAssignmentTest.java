package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Which shards each live member should hold: balanced, agreed by all, and sticky. */
class ShardAssignmentTest {

  @Test
  void threeMembersOfTwelveShardsGetFourEachAndAgreeFromTheSameView() {
    List<String> members = List.of("a", "b", "c");
    Map<String, Set<Integer>> plan = ShardAssignment.plan(12, members, Map.of(), "a");
    assertThat(plan.get("a")).containsExactly(0, 1, 2, 3);
    assertThat(plan.get("b")).containsExactly(4, 5, 6, 7);
    assertThat(plan.get("c")).containsExactly(8, 9, 10, 11);
    for (String me : members) {
      assertThat(ShardAssignment.of(12, members, Map.of(), me)).isEqualTo(plan.get(me));
    }
  }

  @Test
  void theFirstMembersByIdTakeTheRemainderAndEveryShardHasOneHolder() {
    for (int shards = 1; shards <= 40; shards++) {
      for (int n = 1; n <= 7; n++) {
        List<String> members = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
          members.add("m" + i);
        }
        Map<String, Set<Integer>> plan = ShardAssignment.plan(shards, members, Map.of(), "m0");
        Set<Integer> all = new TreeSet<>();
        for (int i = 0; i < n; i++) {
          Set<Integer> mine = plan.get("m" + i);
          assertThat(mine).hasSize(shards / n + (i < shards % n ? 1 : 0));
          for (int s : mine) {
            assertThat(all.add(s)).as("shard %d assigned twice", s).isTrue();
          }
        }
        assertThat(all).hasSize(shards);
      }
    }
  }

  @Test
  void aJoinerGetsItsShareFromTheOthersAndNoOtherShardMoves() {
    Map<Integer, String> holders = new HashMap<>();
    for (int s = 0; s < 12; s++) {
      holders.put(s, s < 6 ? "a" : "b");
    }
    Map<String, Set<Integer>> plan = ShardAssignment.plan(12, List.of("a", "b", "c"), holders, "c");
    assertThat(plan.get("a")).containsExactly(0, 1, 2, 3);
    assertThat(plan.get("b")).containsExactly(6, 7, 8, 9);
    assertThat(plan.get("c")).containsExactly(4, 5, 10, 11);
  }

  @Test
  void theShardsOfAMemberThatLeftAreSharedByTheOthersWhoKeepTheirOwn() {
    Map<Integer, String> holders = new HashMap<>();
    for (int s = 0; s < 12; s++) {
      holders.put(s, List.of("a", "b", "c").get(s / 4));
    }
    // b is gone: its leases still show until they expire, but only live members keep shards
    Map<String, Set<Integer>> plan = ShardAssignment.plan(12, List.of("a", "c"), holders, "a");
    assertThat(plan.get("a")).containsExactly(0, 1, 2, 3, 4, 5);
    assertThat(plan.get("c")).containsExactly(6, 7, 8, 9, 10, 11);
  }

  @Test
  void aMemberNotYetListedCountsItselfAndBadInputIsRefused() {
    assertThat(ShardAssignment.of(4, List.of(), Map.of(), "solo")).containsExactly(0, 1, 2, 3);
    assertThat(ShardAssignment.of(4, List.of("a"), Map.of(0, "a", 1, "a", 2, "a"), "b"))
        .containsExactly(2, 3);
    assertThatThrownBy(() -> ShardAssignment.of(0, List.of("a"), Map.of(), "a"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shards");
  }
}
