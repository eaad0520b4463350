package dev.postbox.core.engine.relay;

import static dev.postbox.core.engine.relay.RelayPipelineTest.ack;
import static dev.postbox.core.engine.relay.RelayPipelineTest.failed;
import static dev.postbox.core.engine.relay.RelayPipelineTest.relay;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.engine.relay.RelayPipelineTest.HandReleasedPublisher;
import dev.postbox.core.engine.relay.RelayPipelineTest.MemoryStore;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.LaneLease;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The pipeline with a publisher that {@linkplain
 * dev.postbox.core.spi.RelayPublisher#pipelinesInOrder() pipelines in order}: batch n+1 is sent
 * behind n before n's outcomes are in, and marked only if every row of n was acknowledged; after a
 * failure in n its rows go out again after n's failed rows. In memory, outcomes released by hand;
 * no broker, no timing.
 */
class RelayOrderedPipeliningTest {

  @Test
  void theNextBatchIsSentBehindTheOneInFlightBeforeItsOutcomes() throws Exception {
    MemoryStore store = new MemoryStore(6);
    PipeliningPublisher publisher = new PipeliningPublisher();
    try (Relay relay = started(store, publisher)) {
      await().until(() -> publisher.behind.size() == 2); // batch 0 has no outcome yet
      assertThat(publisher.sent.get(1)).containsExactly(3L, 4L);
      assertThat(publisher.behind).containsExactly(false, true);
      assertThat(store.published).isEmpty();

      publisher.release(0, List.of(ack(), ack()));
      await().until(() -> publisher.behind.size() == 3); // rows 5, 6 behind 3, 4 (no outcome yet)
      assertThat(publisher.sent.get(2)).containsExactly(5L, 6L);
      assertThat(publisher.behind).containsExactly(false, true, true);
      assertThat(store.published).containsExactly(1L, 2L);

      publisher.release(1, List.of(ack(), ack()));
      publisher.release(2, List.of(ack(), ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 3L, 4L, 5L, 6L)));
    }
  }

  @Test
  void aFailedBatchLeavesTheOneSentBehindItUnmarkedAndItsRowsGoAgainAfterTheFailedOnes()
      throws Exception {
    MemoryStore store = new MemoryStore(6);
    PipeliningPublisher publisher = new PipeliningPublisher();
    try (Relay relay = started(store, publisher)) {
      await().until(() -> publisher.behind.size() == 2); // rows 3, 4 sent behind 1, 2
      // the broker confirms 3 and 4, but row 2 (ahead of them) failed
      publisher.release(1, List.of(ack(), ack()));
      publisher.release(0, List.of(ack(), failed(new RuntimeException("nacked"))));
      await().until(() -> publisher.behind.size() == 4);
      assertThat(publisher.sent.get(2))
          .as("row 2 goes again first, then the rows sent behind it, in position order")
          .containsExactly(2L, 3L);
      assertThat(publisher.sent.get(3)).containsExactly(4L, 5L);
      assertThat(publisher.behind).containsExactly(false, true, false, true);
      assertThat(store.published)
          .as("rows 3 and 4 were confirmed behind a failed row: not marked")
          .containsExactly(1L);

      publisher.release(2, List.of(ack(), ack()));
      await().until(() -> publisher.behind.size() == 5);
      publisher.release(3, List.of(ack(), ack()));
      publisher.release(4, List.of(ack()));
      await().until(() -> store.published.equals(List.of(1L, 2L, 3L, 4L, 5L, 6L)));
    }
  }

  /** A relay on {@code store}, started (batches of 2 rows). */
  private static Relay started(MemoryStore store, PipeliningPublisher publisher) {
    Relay r = relay(store, publisher);
    r.start();
    return r;
  }

  /** Hands each batch sent behind another over at once, and records which were. */
  static final class PipeliningPublisher extends HandReleasedPublisher {
    final List<Boolean> behind = new CopyOnWriteArrayList<>();

    @Override
    public boolean pipelinesInOrder() {
      return true;
    }

    @Override
    public PendingPublish send(List<Message> messages, List<LaneLease> leases) {
      PendingPublish p = super.send(messages, leases);
      behind.add(false);
      return p;
    }

    @Override
    public PendingPublish sendAfter(
        PendingPublish previous, List<Message> messages, List<LaneLease> leases) {
      PendingPublish p = send(messages);
      behind.add(true);
      return p;
    }
  }
}
