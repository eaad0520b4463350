package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.time.FakeTime;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The purge loop's schedule, on fake time: it never sleeps for real. */
class InboxJanitorTest {

  private static final Duration INTERVAL = Duration.ofMinutes(10);
  private static final Duration RETENTION = Duration.ofDays(8);

  private final FakeTime time = FakeTime.create();

  /** An inbox whose purges answer from a script (a null entry: the purge fails). */
  private static final class ScriptedInbox implements InboxStore {
    final Deque<Integer> answers = new ArrayDeque<>();
    final List<String> calls = new ArrayList<>();

    ScriptedInbox answer(Integer... purged) {
      answers.addAll(List.of(purged));
      return this;
    }

    @Override
    public int purge(String consumer, Duration age, int limit) {
      calls.add(consumer + " " + age + " " + limit);
      Integer n = answers.poll();
      if (n == null || n < 0) {
        throw new IllegalStateException("database down");
      }
      return n;
    }

    @Override
    public boolean processOnce(String consumer, UUID messageId, Work work) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean advanceVersion(Connection connection, String entity, long version) {
      throw new UnsupportedOperationException();
    }
  }

  /** Runs a janitor until it has slept {@code sleeps} times. */
  private void runUntilSlept(ScriptedInbox inbox, int sleeps) {
    new InboxJanitor(
            inbox, "inventory", RETENTION, INTERVAL, time, () -> time.sleeps().size() < sleeps)
        .run();
  }

  @Test
  void purgesOneChunkThenWaitsTheInterval() {
    ScriptedInbox inbox = new ScriptedInbox().answer(3, 0, 0);
    runUntilSlept(inbox, 3);
    assertThat(inbox.calls).containsOnly("inventory " + RETENTION + " 10000").hasSize(3);
    assertThat(time.sleeps()).containsExactly(INTERVAL, INTERVAL, INTERVAL);
  }

  @Test
  void aFullChunkIsFollowedByTheNextAtOnce() {
    ScriptedInbox inbox = new ScriptedInbox().answer(10_000, 10_000, 17, 0);
    runUntilSlept(inbox, 2);
    assertThat(inbox.calls).hasSize(4);
    assertThat(time.sleeps()).containsExactly(INTERVAL, INTERVAL);
  }

  @Test
  void aFailedPurgeIsTriedAgainAfterTheInterval() {
    ScriptedInbox inbox = new ScriptedInbox().answer(-1, 5);
    runUntilSlept(inbox, 2);
    assertThat(inbox.calls).hasSize(2);
    assertThat(time.sleeps()).containsExactly(INTERVAL, INTERVAL);
  }

  @Test
  void closingStopsBetweenChunks() {
    ScriptedInbox inbox = new ScriptedInbox().answer(10_000, 10_000, 10_000);
    // the loop's check, the check between chunks, the check after the sleep
    List<Boolean> running = new ArrayList<>(List.of(true, false, false));
    new InboxJanitor(inbox, "inventory", RETENTION, INTERVAL, time, () -> running.remove(0)).run();
    assertThat(inbox.calls).as("one chunk, then the loop saw it is closing").hasSize(1);
    assertThat(time.sleeps()).containsExactly(INTERVAL);
  }

  @Test
  void anInterruptEndsTheLoop() {
    ScriptedInbox inbox = new ScriptedInbox().answer(1, 1, 1);
    Thread.currentThread().interrupt();
    new InboxJanitor(inbox, "inventory", RETENTION, INTERVAL, time, () -> true).run();
    assertThat(inbox.calls).hasSize(1);
    assertThat(time.sleeps()).isEmpty();
    assertThat(Thread.interrupted())
        .as("FakeTime consumed the flag, as Thread.sleep does")
        .isFalse();
  }
}
