package dev.postbox.kafka.internal;

import java.util.Collection;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

/**
 * Told of partitions newly assigned to a subscriber (the increment only, with cooperative and
 * KIP-848 assignments), on the poll thread inside {@code poll}, before any of their records is
 * fetched: the place to {@code seek} them.
 */
@FunctionalInterface
public interface AssignmentListener {

  /** Nothing to do. */
  AssignmentListener NONE = (consumer, assigned) -> {};

  /** {@code assigned} were just added to {@code consumer}'s assignment. */
  void assigned(Consumer<byte[], byte[]> consumer, Collection<TopicPartition> assigned);
}
