package dev.postbox.core.engine.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.spi.RelayStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * The relay and an unpublishable row in its pipeline: the batch claimed while the row was in flight
 * may hold later rows of its key, so it is dropped unsent (no backoff: nothing is wrong with the
 * broker) and claimed again once the row holds its key; other keys go on. In-memory store, a
 * publisher whose outcomes the test releases by hand; no broker, no timing.
 */
class RelayUnpublishableTest {

  // rows 1..6: the key of row 3 (K) comes again at row 5
  private static final List<String> KEYS = List.of("A", "B", "K", "C", "K", "D");

  @Test
  void anUnpublishableRowInFlightDropsTheNextBatchAndHoldsItsKeyWhileOtherKeysGoOn()
      throws Exception {
    MemoryStore store = new MemoryStore(KEYS, Set.of());
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    List<Duration> backoffs = new CopyOnWriteArrayList<>();
    try (Relay relay = started(store, publisher, UnpublishableRows.BLOCK_KEY, backoffs)) {
      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 2); // rows 3, 4 in flight; 5, 6 claimed next
      await().until(() -> store.claimsExcluding.contains(Set.of(3L, 4L)));
      publisher.release(1, List.of(tooLarge(), ack()));
      await().until(() -> publisher.sent.size() == 3);
      assertThat(publisher.sent.get(2))
          .as("5 and 6 were dropped unsent; claimed again, K's row 5 waits behind row 3")
          .containsExactly(6L);
      publisher.release(2, List.of(ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 4L, 6L)));
      assertThat(store.marked).containsExactly(Map.entry(3L, RelayStore.Hold.KEY));
      assertThat(store.pending).containsOnlyKeys(5L);
      assertThat(backoffs).as("an unpublishable row is not a reason to back off").isEmpty();
    }
  }

  @Test
  void theSkipPolicyMarksTheRowWithoutAHoldAndItsKeyGoesOn() throws Exception {
    MemoryStore store = new MemoryStore(KEYS, Set.of());
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    try (Relay relay = started(store, publisher, UnpublishableRows.SKIP, new ArrayList<>())) {
      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 2);
      publisher.release(1, List.of(tooLarge(), ack()));
      await().until(() -> publisher.sent.size() == 3);
      assertThat(publisher.sent.get(2)).containsExactly(5L, 6L);
      publisher.release(2, List.of(ack(), ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 4L, 5L, 6L)));
      assertThat(store.marked).containsExactly(Map.entry(3L, RelayStore.Hold.NONE));
    }
  }

  @Test
  void aMissingTopicHoldsTheTopic() throws Exception {
    MemoryStore store = new MemoryStore(KEYS, Set.of());
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    try (Relay relay = started(store, publisher, UnpublishableRows.SKIP, new ArrayList<>())) {
      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 2);
      publisher.release(
          1,
          List.of(
              new PublishOutcome.Failed(
                  new RuntimeException("topic t does not exist"), false, true),
              ack()));
      await().until(() -> store.marked.containsKey(3L));
      assertThat(store.marked)
          .as("even under SKIP: skipping would skip every row of the topic")
          .containsExactly(Map.entry(3L, RelayStore.Hold.TOPIC));
    }
  }

  @Test
  void anUnreadableRowIsNeverSentAndHoldsItsKey() throws Exception {
    MemoryStore store = new MemoryStore(KEYS, Set.of(3L));
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    try (Relay relay = started(store, publisher, UnpublishableRows.BLOCK_KEY, new ArrayList<>())) {
      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 2);
      assertThat(publisher.sent.get(1))
          .as("row 3 is not handed to the publisher")
          .containsExactly(4L);
      publisher.release(1, List.of(ack()));
      await().until(() -> publisher.sent.size() == 3);
      assertThat(publisher.sent.get(2)).containsExactly(6L);
      publisher.release(2, List.of(ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 4L, 6L)));
      assertThat(store.marked).containsExactly(Map.entry(3L, RelayStore.Hold.KEY));
      assertThat(store.errors.get(3L)).contains("cannot be read").contains("corrupt");
    }
  }

  private static Relay started(
      MemoryStore store,
      HandReleasedPublisher publisher,
      UnpublishableRows policy,
      List<Duration> backoffs) {
    Relay relay =
        Relay.builder(store, publisher)
            .batchSize(2)
            .pollInterval(Duration.ofMillis(20))
            .leaseTtl(Duration.ofMinutes(5))
            .shutdownTimeout(Duration.ofSeconds(5))
            .sleeper(backoffs::add)
            .unpublishableRows(policy)
            .build();
    relay.start();
    await().until(() -> publisher.sent.size() == 1);
    return relay;
  }

  private static PublishOutcome ack() {
    return PublishOutcome.ACKNOWLEDGED;
  }

  private static PublishOutcome tooLarge() {
    return new PublishOutcome.Failed(new RuntimeException("record too large"), true);
  }

  /**
   * Records each sent batch's positions (header pos); outcomes come when the test releases them.
   */
  static final class HandReleasedPublisher implements RelayPublisher {
    final List<List<Long>> sent = new CopyOnWriteArrayList<>();
    private final List<CompletableFuture<List<PublishOutcome>>> outcomes =
        new CopyOnWriteArrayList<>();

    @Override
    public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
      return send(messages).outcomes();
    }

    @Override
    public PendingPublish send(List<Message> messages) {
      CompletableFuture<List<PublishOutcome>> f = new CompletableFuture<>();
      outcomes.add(f);
      List<Long> positions = new ArrayList<>();
      for (Message m : messages) {
        positions.add(Long.parseLong(m.header("pos").orElseThrow()));
      }
      sent.add(positions);
      return () -> {
        try {
          return f.get();
        } catch (ExecutionException e) {
          throw new IllegalStateException(e);
        }
      };
    }

    void release(int batch, List<PublishOutcome> result) {
      outcomes.get(batch).complete(result);
    }

    @Override
    public void close() {
      outcomes.forEach(f -> f.complete(List.of()));
    }
  }

  /**
   * One lane; rows 1..n with the given keys, pending; holds as the PostgreSQL store keeps them
   * (later rows of a held key are not claimed). Thread-safe (synchronized).
   */
  static final class MemoryStore extends OneLaneMemoryStore {
    final Map<Long, Hold> marked = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<Long, String> errors = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<String, Long> heldKeys = new HashMap<>();

    MemoryStore(List<String> keys, Set<Long> unreadable) {
      for (long p = 1; p <= keys.size(); p++) {
        Message m =
            Message.builder("t", "x")
                .key(keys.get((int) p - 1))
                .header("pos", Long.toString(p))
                .jsonPayload("{}")
                .build();
        pending.put(
            p,
            new OutboxRecord(
                p, 0, m, Instant.EPOCH, 0, unreadable.contains(p) ? "corrupt headers" : null));
      }
    }

    @Override
    boolean claimable(OutboxRecord r) {
      Long hold = heldKeys.get(r.message().key().orElseThrow());
      return hold == null || hold >= r.position();
    }

    @Override
    public int markFailed(
        String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String e) {
      throw new AssertionError("the relay marks unpublishable rows with markUnpublishable");
    }

    @Override
    public synchronized int markUnpublishable(
        String instanceId,
        Collection<LaneLease> leases,
        List<OutboxRecord> records,
        String error,
        Hold hold) {
      for (OutboxRecord r : records) {
        pending.remove(r.position());
        marked.put(r.position(), hold);
        errors.put(r.position(), error);
        if (hold != Hold.NONE) {
          heldKeys.put(r.message().key().orElseThrow(), r.position());
        }
      }
      return records.size();
    }
  }
}
