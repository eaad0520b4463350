package dev.postbox.admin;

import java.time.Duration;
import java.util.List;

/**
 * Where the lag of consumers is measured as age: a transport's lag probe (for Kafka, {@code
 * ConsumerLagProbe} of postbox-kafka, adapted by the front end). The operations API names no
 * transport, so the front end supplies it.
 */
@FunctionalInterface
public interface ConsumerLagSource {

  /** The lag of each partition of each group measured now. */
  List<PartitionLag> read();

  /**
   * One partition of one consumer group.
   *
   * @param offsetLag records behind
   * @param oldestUnprocessedAge the age of the oldest record not yet finished: the lag that matters
   */
  record PartitionLag(
      String group, String topic, int partition, long offsetLag, Duration oldestUnprocessedAge) {}
}
