package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.junit.jupiter.api.Test;

/** Issue 13 #3: a commit before handling that fails retriably skips the poll, never the loop. */
class CommitBeforeHandlingTest {

  private static final TopicPartition P0 = new TopicPartition("orders", 0);
  private static final TopicPartition P1 = new TopicPartition("orders", 1);

  /** Kafka's own in-memory consumer, whose next commit fails with {@code failure} if set. */
  private static final class FailingCommits extends MockConsumer<byte[], byte[]> {
    final AtomicReference<RuntimeException> failure = new AtomicReference<>();

    FailingCommits() {
      super("earliest");
    }

    @Override
    public synchronized void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
      RuntimeException e = failure.getAndSet(null);
      if (e != null) {
        throw e;
      }
      super.commitSync(offsets);
    }
  }

  private final FailingCommits consumer = new FailingCommits();
  private final CommitBeforeHandling commits = new CommitBeforeHandling(consumer, "inventory");

  private ConsumerRecords<byte[], byte[]> polled() {
    consumer.assign(List.of(P0, P1));
    consumer.updateBeginningOffsets(Map.of(P0, 0L, P1, 0L));
    for (int i = 0; i < 3; i++) {
      consumer.addRecord(new ConsumerRecord<>("orders", 0, 10 + i, null, new byte[] {1}));
    }
    consumer.addRecord(new ConsumerRecord<>("orders", 1, 7, null, new byte[] {2}));
    consumer.seek(P0, 10);
    consumer.seek(P1, 7);
    ConsumerRecords<byte[], byte[]> rs = consumer.poll(Duration.ZERO);
    assertThat(rs.count()).isEqualTo(4);
    return rs;
  }

  @Test
  void aCommitThatSucceedsLetsTheRecordsBeHandled() {
    ConsumerRecords<byte[], byte[]> rs = polled();
    assertThat(commits.commit(rs)).isTrue();
    assertThat(consumer.committed(java.util.Set.of(P0, P1)))
        .containsEntry(P0, new OffsetAndMetadata(13))
        .containsEntry(P1, new OffsetAndMetadata(8));
  }

  @Test
  void aRebalanceDuringTheCommitSkipsThePollAndReadsItAgain() {
    for (RuntimeException e :
        List.of(
            new RebalanceInProgressException("rebalancing"),
            new CommitFailedException("generation gone"),
            new TimeoutException("coordinator slow"))) {
      ConsumerRecords<byte[], byte[]> rs = polled();
      consumer.failure.set(e);
      assertThat(commits.commit(rs)).as("handled after %s", e).isFalse();
      // not committed, not handled: read again from the first polled record
      assertThat(consumer.position(P0)).isEqualTo(10);
      assertThat(consumer.position(P1)).isEqualTo(7);
    }
    assertThat(commits.skipped()).isEqualTo(12);
    // the next poll returns them again; this time the commit succeeds and they are handled once
    consumer.seek(P0, 10); // MockConsumer serves records once: add them again for the re-poll
    assertThat(commits.commit(polled())).isTrue();
  }

  @Test
  void aFencedStaticMemberIsNotRetried() {
    ConsumerRecords<byte[], byte[]> rs = polled();
    consumer.failure.set(new FencedInstanceIdException("another instance took the id"));
    assertThatThrownBy(() -> commits.commit(rs)).isInstanceOf(FencedInstanceIdException.class);
  }
}
