package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PausePolicyTest {

  private final InFlightLimit limit = new InFlightLimit(1_000);

  private static Map<String, Integer> unfinished(int a, int b, int c) {
    Map<String, Integer> m = new HashMap<>();
    m.put("a", a);
    m.put("b", b);
    m.put("c", c);
    return m;
  }

  @Test
  void everyPartitionPausesWhenTheLimitIsFullUntilHalfOfItIsFree() {
    PausePolicy policy = new PausePolicy(1_000, 0);
    limit.dispatched(1_000);
    Set<String> paused = policy.decide(limit, unfinished(1_000, 0, 0), Set.of());
    assertThat(paused).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(policy.allPaused()).isTrue();
    limit.finished(499); // 501 left
    assertThat(policy.decide(limit, unfinished(501, 0, 0), paused)).hasSize(3);
    limit.finished(1); // 500 left
    assertThat(policy.decide(limit, unfinished(500, 0, 0), paused)).isEmpty();
    assertThat(policy.allPaused()).isFalse();
  }

  @Test
  void withoutAFloorOnePartitionMayHoldTheWholeWindow() {
    PausePolicy policy = new PausePolicy(1_000, 0); // key order: a partition runs concurrently
    limit.dispatched(900);
    assertThat(policy.decide(limit, unfinished(900, 0, 0), Set.of())).isEmpty();
  }

  @Test
  void aSerialPartitionPausesAtItsShareSoTheOthersGetRead() {
    PausePolicy policy = new PausePolicy(1_000, 200); // share max(200, 1000 / 3) = 333
    limit.dispatched(400);
    assertThat(policy.decide(limit, unfinished(332, 68, 0), Set.of())).isEmpty();
    Set<String> paused = policy.decide(limit, unfinished(333, 67, 0), Set.of());
    assertThat(paused).containsExactly("a");
    assertThat(policy.allPaused()).isFalse();
    // stays paused until it is down to half of its share
    assertThat(policy.decide(limit, unfinished(167, 67, 0), paused)).containsExactly("a");
    assertThat(policy.decide(limit, unfinished(166, 67, 0), paused)).isEmpty();
  }

  @Test
  void theShareIsNeverBelowTheFloor() {
    PausePolicy policy = new PausePolicy(1_000, 200);
    Map<String, Integer> many = new HashMap<>();
    for (int i = 0; i < 10; i++) {
      many.put("p" + i, i == 0 ? 199 : 0); // share max(200, 1000 / 10) = 200
    }
    limit.dispatched(199);
    assertThat(policy.decide(limit, many, Set.of())).isEmpty();
    many.put("p0", 200);
    limit.dispatched(1);
    assertThat(policy.decide(limit, many, Set.of())).containsExactly("p0");
  }

  @Test
  void aPartitionPausedByTheLimitStaysPausedAfterwardsWhileAboveHalfItsShare() {
    PausePolicy policy = new PausePolicy(1_000, 200);
    limit.dispatched(1_000);
    Set<String> paused = policy.decide(limit, unfinished(600, 300, 100), Set.of());
    assertThat(paused).hasSize(3);
    limit.finished(600); // 400 left: the limit resumes
    assertThat(policy.decide(limit, unfinished(300, 100, 0), paused)).containsExactly("a");
  }

  @Test
  void rejectsBadSettings() {
    assertThatThrownBy(() -> new PausePolicy(0, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new PausePolicy(10, -1)).isInstanceOf(IllegalArgumentException.class);
  }
}
