package dev.postbox.verify;

import dev.postbox.verify.TopicReader.Published;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What was published, as a reader of the broker saw it, for the {@link HistoryChecker}: Kafka's
 * {@link TopicReader} (partitions and offsets), or RabbitMQ's {@link RabbitQueueReader} (shard
 * queues and the order of arrival).
 */
interface PublishedRecords {

  /** Every record read so far, per partition (or shard queue), in the order read. */
  Map<Integer, List<Published>> all();

  /** The records of {@code partition} with offsets in [from, to) (the offset audit's). */
  default List<Published> range(int partition, long from, long to) {
    return List.of();
  }

  /**
   * Waits until the reader read every partition up to {@code positions} (next offset); false on
   * timeout. Only the offset audit asks, so only for a transport with offsets.
   */
  default boolean awaitPositions(Map<Integer, Long> positions, Duration timeout) {
    return true;
  }

  /** The reader's next offset in {@code partition} (a transport with offsets only). */
  default long position(int partition) {
    return 0;
  }

  /**
   * The end (offset + 1) of the last record read from {@code partition}, before any transaction
   * marker (a transport with offsets only); never reached by default.
   */
  default long lastRecordEnd(int partition) {
    return Long.MAX_VALUE;
  }
}
