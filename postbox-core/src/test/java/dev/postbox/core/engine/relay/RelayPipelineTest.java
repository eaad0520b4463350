package dev.postbox.core.engine.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * The relay's pipeline: batch n+1 is claimed while batch n is in flight and sent before n is
 * marked, but never while n is in flight, and never after n failed transiently. An in-memory store
 * and a publisher whose outcomes the test releases by hand; no broker, no timing.
 */
class RelayPipelineTest {

  @Test
  void theNextBatchIsClaimedWhileOneIsInFlightAndSentOnlyAfterItsOutcomes() throws Exception {
    MemoryStore store = new MemoryStore(6);
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    try (Relay relay = startedWithFirstBatchSent(store, publisher)) {
      // batch 1 is in flight: the relay claims batch 2 (without batch 1's rows) and waits
      await().until(() -> store.claimsExcluding.contains(Set.of(1L, 2L)));
      assertThat(publisher.sent).hasSize(1);
      assertThat(store.published).isEmpty();

      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 2);
      assertThat(publisher.sent.get(1)).containsExactly(3L, 4L);
      await().until(() -> store.published.equals(List.of(1L, 2L)));

      publisher.release(1, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 3);
      publisher.release(2, List.of(ack(), ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 3L, 4L, 5L, 6L)));
    }
  }

  @Test
  void aTransientFailureInFlightStopsTheClaimedNextBatchFromBeingSent() throws Exception {
    MemoryStore store = new MemoryStore(6);
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    try (Relay relay = startedWithFirstBatchSent(store, publisher)) {
      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 2); // rows 3, 4 in flight; 5, 6 claimed next
      await().until(() -> store.claimsExcluding.contains(Set.of(3L, 4L)));
      // row 3 fails transiently (row 4 is then not appended either, as Kafka's publisher does)
      RuntimeException down = new RuntimeException("broker unavailable");
      publisher.release(
          1, List.of(new RelayPublisher.PublishOutcome.Failed(down, false), failed(down)));
      await().until(() -> publisher.sent.size() == 3);
      assertThat(publisher.sent.get(2))
          .as("rows 5, 6 were dropped unsent: 3 and 4 go again first")
          .containsExactly(3L, 4L);
      publisher.release(2, List.of(ack(), ack()));
      await().until(() -> publisher.sent.size() == 4);
      assertThat(publisher.sent.get(3)).containsExactly(5L, 6L);
      publisher.release(3, List.of(ack(), ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 3L, 4L, 5L, 6L)));
    }
  }

  @Test
  void thePublisherLearnsTheLeasesBeforeTheClaimAndALaneTheBrokerFencedIsGivenUp()
      throws Exception {
    List<LaneLease> released = new CopyOnWriteArrayList<>();
    MemoryStore store =
        new MemoryStore(6) {
          @Override
          public void releaseLeases(String instanceId, Collection<LaneLease> leases) {
            released.addAll(leases);
          }
        };
    HandReleasedPublisher publisher = new HandReleasedPublisher();
    try (Relay relay = startedWithFirstBatchSent(store, publisher)) {
      LaneLease lease = new LaneLease(0, 1);
      assertThat(publisher.toldBeforeFirstSend).containsExactly(lease);
      assertThat(publisher.leases.get(0)).containsExactly(lease, lease);
      RuntimeException fenced =
          new dev.postbox.core.spi.LaneFencedException(0, 1, "another relay owns lane 0", null);
      publisher.release(0, List.of(failed(fenced), failed(fenced)));
      await().until(() -> released.equals(List.of(lease)));
      assertThat(relay.ownedLanes()).isEmpty();
      assertThat(store.published).as("nothing of a fenced lane is marked").isEmpty();
      assertThat(publisher.sent).as("the batch claimed meanwhile is not sent").hasSize(1);
    }
  }

  /** A relay on {@code store}, started, once its first batch is handed to {@code publisher}. */
  static Relay startedWithFirstBatchSent(MemoryStore store, HandReleasedPublisher publisher) {
    Relay relay = relay(store, publisher);
    relay.start();
    await().until(() -> publisher.sent.size() == 1);
    return relay;
  }

  static Relay relay(MemoryStore store, HandReleasedPublisher publisher) {
    return Relay.builder(store, publisher)
        .batchSize(2)
        .pollInterval(Duration.ofMillis(20))
        .leaseTtl(Duration.ofMinutes(5))
        .shutdownTimeout(Duration.ofSeconds(5))
        .sleeper(d -> {}) // backoff without waiting
        .build();
  }

  static RelayPublisher.PublishOutcome ack() {
    return RelayPublisher.PublishOutcome.ACKNOWLEDGED;
  }

  static RelayPublisher.PublishOutcome failed(RuntimeException e) {
    return new RelayPublisher.PublishOutcome.Failed(e, false);
  }

  /** Records each sent batch's positions; its outcomes come when the test releases them. */
  static class HandReleasedPublisher implements RelayPublisher {
    final List<List<Long>> sent = new CopyOnWriteArrayList<>();
    final List<List<LaneLease>> leases = new CopyOnWriteArrayList<>();
    volatile List<LaneLease> toldBeforeFirstSend;
    private volatile List<LaneLease> told = List.of();

    @Override
    public void lanesOwned(Collection<LaneLease> owned) {
      told = List.copyOf(owned);
    }

    @Override
    public PendingPublish send(List<Message> messages, List<LaneLease> leases) {
      if (toldBeforeFirstSend == null) {
        toldBeforeFirstSend = told;
      }
      this.leases.add(List.copyOf(leases));
      return send(messages);
    }

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
        positions.add(Long.parseLong(m.key().orElseThrow()));
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

  /** One lane, rows 1..n pending; the message key is the position. Thread-safe (synchronized). */
  static class MemoryStore extends OneLaneMemoryStore {
    MemoryStore(int rows) {
      for (long p = 1; p <= rows; p++) {
        Message m = Message.builder("t", "x").key(Long.toString(p)).jsonPayload("{}").build();
        pending.put(p, new OutboxRecord(p, 0, m, Instant.EPOCH, 0));
      }
    }

    @Override
    public int markFailed(
        String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String e) {
      throw new AssertionError("no permanent failure in these tests");
    }
  }
}
