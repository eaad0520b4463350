package dev.postbox.core.engine.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Several relays' lane ownership on one lease table, on fake time: each relay's heartbeat loop and
 * a publishing loop that settles a batch every {@link #BATCH} and then performs the releases, run
 * one thread at a time in wake-up order ({@link VirtualTimeThreads}). Checks how fast a joining
 * relay gets its share, that no lane stands unowned for long, and that the lanes stay put once
 * shared.
 */
class LaneBalancingTest {

  private static final int LANES = 64;
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration INTERVAL = TTL.dividedBy(4);
  private static final Duration STEP =
      INTERVAL.dividedBy(LaneOwnership.SETTLING_BEATS_PER_INTERVAL);
  private static final Duration BATCH = Duration.ofMillis(30);

  private final FakeTime time = FakeTime.create();
  private final SharedLeaseTable store = new SharedLeaseTable(time, LANES);
  private final VirtualTimeThreads threads = new VirtualTimeThreads(time);
  private final Map<String, LaneOwnership> relays = new HashMap<>();

  @AfterEach
  void stop() throws InterruptedException {
    threads.close();
  }

  /** Starts a relay as RelayEngine.start does: a heartbeat, then its two loops. */
  private LaneOwnership start(String name) throws InterruptedException {
    LaneOwnership lanes =
        new LaneOwnership(
            name,
            name,
            store,
            TTL,
            INTERVAL,
            time,
            threads.sleeper(),
            RelayListener.NONE,
            () -> {});
    relays.put(name, lanes);
    lanes.heartbeat();
    threads.start("heartbeat-" + name, () -> lanes.heartbeatLoop(() -> true));
    threads.start(
        "publishing-" + name,
        () -> {
          try {
            while (true) {
              threads.sleeper().sleep(BATCH); // the batch in flight settles
              lanes.applyReleases();
            }
          } catch (InterruptedException e) {
            // stopped
          }
        });
    return lanes;
  }

  private static Duration ms(long millis) {
    return Duration.ofMillis(millis);
  }

  @Test
  void twoRelaysStartedTogetherShareTheLanesWithinAnIntervalAndKeepThem() throws Exception {
    start("a");
    threads.runUntil(ms(10)); // the bench starts the second right after the first
    start("b");
    Duration shared = null;
    for (long t = 10; t <= 30_000; t += 5) {
      threads.runUntil(ms(t));
      if (shared == null && store.held("a") == 32 && store.held("b") == 32) {
        shared = ms(t);
      }
    }
    assertThat(shared)
        .as("b holds half the lanes within one heartbeat interval of starting (moves: %s)", moves())
        .isNotNull()
        .isLessThanOrEqualTo(ms(10).plus(INTERVAL));
    assertThat(longestUnowned())
        .as("a lane a gave up waits at most one settling step for b")
        .isLessThanOrEqualTo(STEP);
    Duration settled = shared;
    assertThat(store.moves().stream().filter(m -> m.at().compareTo(settled) > 0))
        .as("no lane changes owner once shared, while both live")
        .isEmpty();
    assertThat(store.held("a")).isEqualTo(32);
    assertThat(store.held("b")).isEqualTo(32);
  }

  @Test
  void aRelayJoiningMidIntervalTakesTheReleasedLanesWithinOneSettlingStep() throws Exception {
    start("a");
    threads.runUntil(Duration.ofSeconds(20)); // long settled alone, beating once per interval
    threads.runUntil(Duration.ofMillis(21_000));
    start("b");
    threads.runUntil(Duration.ofSeconds(40));
    assertThat(store.held("a")).isEqualTo(32);
    assertThat(store.held("b")).isEqualTo(32);
    assertThat(longestUnowned()).as("moves: %s", moves()).isLessThanOrEqualTo(STEP);
    Duration lastMove = store.moves().getLast().at();
    assertThat(lastMove)
        .as("shared within an interval of a's next beat after b joined")
        .isLessThanOrEqualTo(Duration.ofMillis(21_000).plus(INTERVAL).plus(INTERVAL));
  }

  @Test
  void afterTheShareSettlesEveryRelayBeatsOncePerIntervalAndNoLaneMoves() throws Exception {
    start("a");
    start("b");
    start("c"); // ceil(64 / 3) = 22: c stays at 20, below its share, for good
    threads.runUntil(Duration.ofSeconds(10));
    int movesAt10s = store.moves().size();
    threads.runUntil(Duration.ofSeconds(30));
    assertThat(store.held("a") + store.held("b") + store.held("c")).isEqualTo(LANES);
    assertThat(store.held("c")).isEqualTo(20);
    assertThat(store.moves()).as("no moves after 10 s").hasSize(movesAt10s);
    for (String r : List.of("a", "b", "c")) {
      long beats =
          store.beats().stream()
              .filter(b -> b.owner().equals(r) && b.at().compareTo(Duration.ofSeconds(10)) > 0)
              .count();
      assertThat(beats).as("%s beats once per interval from 10 s to 30 s", r).isEqualTo(8);
    }
  }

  /** The longest time any lane stood without an owner after being given up. */
  private Duration longestUnowned() {
    Map<Integer, Duration> freedAt = new HashMap<>();
    Duration longest = Duration.ZERO;
    for (SharedLeaseTable.Move m : store.moves()) {
      if (m.owner() == null) {
        freedAt.put(m.lane(), m.at());
      } else if (freedAt.containsKey(m.lane())) {
        Duration gap = m.at().minus(freedAt.remove(m.lane()));
        longest = gap.compareTo(longest) > 0 ? gap : longest;
      }
    }
    for (Duration at : freedAt.values()) {
      Duration gap = Duration.ofNanos(time.nanos()).minus(at); // never taken again
      longest = gap.compareTo(longest) > 0 ? gap : longest;
    }
    return longest;
  }

  private List<String> moves() {
    List<String> out = new ArrayList<>();
    Duration last = null;
    int n = 0;
    for (SharedLeaseTable.Move m : store.moves()) {
      if (!m.at().equals(last) && last != null) {
        out.add(last.toMillis() + " ms: " + n);
        n = 0;
      }
      last = m.at();
      n++;
    }
    if (last != null) {
      out.add(last.toMillis() + " ms: " + n);
    }
    return out;
  }
}
