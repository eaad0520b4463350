package dev.postbox.kafka.internal;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.RetriableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code AT_MOST_ONCE} step between a poll and its dispatch: commits the offsets past the
 * polled records before any of them is handled, so that a crash afterwards loses them rather than
 * repeats them.
 *
 * <p>A commit can fail because the group is rebalancing or this member's generation is gone ({@link
 * CommitFailedException}, {@link RebalanceInProgressException}) or for another retriable reason (a
 * timeout, a moving coordinator). None of these ends the subscriber: the poll's records are not
 * handled, and each partition still assigned is rewound to its first polled record, so it is read
 * (and committed before handling) again by whoever owns it after the rebalance. A record is handled
 * only after a successful commit past it: never twice. Other errors (a fenced static member, an
 * authorization failure) are not retriable and are thrown. Poll thread only.
 */
public final class CommitBeforeHandling {

  private static final Logger log = LoggerFactory.getLogger(CommitBeforeHandling.class);

  private final Consumer<byte[], byte[]> consumer;
  private final String name;
  private long skipped;

  /** Commits through {@code consumer} for the subscription {@code name} (for the log). */
  public CommitBeforeHandling(Consumer<byte[], byte[]> consumer, String name) {
    this.consumer = consumer;
    this.name = name;
  }

  /**
   * Commits past {@code records}; returns whether they may be handled ({@code false}: the commit
   * failed retriably, nothing is handled and the partitions still assigned were rewound).
   */
  public boolean commit(ConsumerRecords<byte[], byte[]> records) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    Map<TopicPartition, Long> first = new HashMap<>();
    for (TopicPartition tp : records.partitions()) {
      List<ConsumerRecord<byte[], byte[]>> rs = records.records(tp);
      first.put(tp, rs.get(0).offset());
      offsets.put(tp, new OffsetAndMetadata(rs.get(rs.size() - 1).offset() + 1));
    }
    try {
      consumer.commitSync(offsets);
      return true;
    } catch (CommitFailedException | RebalanceInProgressException | RetriableException e) {
      Set<TopicPartition> assigned = consumer.assignment();
      first.forEach((tp, offset) -> {
        if (assigned.contains(tp)) {
          consumer.seek(tp, offset);
        }
      });
      skipped += records.count();
      log.warn(
          "{}: commit before handling failed ({}); {} records not handled, read again from {}",
          name,
          e.toString(),
          records.count(),
          first);
      return false;
    }
  }

  /** Records not handled because their commit failed, since start. */
  public long skipped() {
    return skipped;
  }
}
