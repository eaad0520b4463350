package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The kill and database-fault gate: a fault goes through only after a commit since the last. */
class ProgressGateTest {

  private final AtomicLong commits = new AtomicLong();
  private final FakeTime time = FakeTime.create();
  private final List<Runnable> duringSleeps = new ArrayList<>();
  private final ProgressGate gate =
      new ProgressGate(
          commits::get,
          d -> {
            time.sleep(d);
            if (!duringSleeps.isEmpty()) {
              duringSleeps.remove(0).run();
            }
          });

  @Test
  void theFirstFaultNeedsNoProgressAndTheNextWaitsForACommit() {
    assertThat(gate.await(() -> false)).isTrue();
    assertThat(time.sleeps()).isEmpty();
    // three rechecks find no commit; one commits during the third wait
    duringSleeps.add(() -> {});
    duringSleeps.add(() -> {});
    duringSleeps.add(commits::incrementAndGet);
    assertThat(gate.await(() -> false)).isTrue();
    assertThat(time.sleeps()).hasSize(3).containsOnly(ProgressGate.RECHECK);
  }

  @Test
  void oneCommitLetsOneFaultThroughNotTwo() {
    commits.set(5);
    assertThat(gate.await(() -> false)).isTrue();
    // no commit since: a second fault waits, and gives up when the phase stops
    int[] checks = {0};
    assertThat(gate.await(() -> ++checks[0] > 4)).isFalse();
    assertThat(time.sleeps()).hasSize(4);
    commits.incrementAndGet();
    assertThat(gate.await(() -> false)).isTrue();
    int[] more = {0};
    assertThat(gate.await(() -> ++more[0] > 2)).isFalse();
    assertThat(time.sleeps()).hasSize(6);
  }

  @Test
  void aNewRoundsFirstFaultNeedsNoProgressAgain() {
    commits.set(3);
    assertThat(gate.await(() -> false)).isTrue();
    gate.reset();
    // a new phase counts its own commits from zero: the gate must not wait for the old count
    commits.set(0);
    assertThat(gate.await(() -> false)).isTrue();
    assertThat(time.sleeps()).isEmpty();
  }

  @Test
  void stoppedBeforeWaitingLetsNothingThrough() {
    assertThat(gate.await(() -> true)).isFalse();
    assertThat(time.sleeps()).isEqualTo(List.<Duration>of());
  }
}
