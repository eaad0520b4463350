package dev.postbox.kafka.internal;

import dev.postbox.core.spi.OffsetStore;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.Collection;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The offsets-in-the-database mode's half on assignment: seeks every newly assigned partition
 * (cooperative and KIP-848 increments included) to the next offset stored with the effects, so the
 * group's committed offsets in Kafka are never what decides where reading starts. A partition with
 * no stored offset starts where the consumer would (its committed offset, else {@code
 * auto.offset.reset}): nothing of it was applied through the store yet.
 *
 * <p>If the store cannot be read after {@link #ATTEMPTS} tries, the partition starts from Kafka's
 * committed offset, with a warning: no effect is repeated even then (the store skips every offset
 * below the stored one), and Kafka's committed offset never passes an applied record's successor
 * unless the database lost a commit. Poll thread only.
 */
public final class StoredOffsetSeek implements AssignmentListener {

  private static final Logger log = LoggerFactory.getLogger(StoredOffsetSeek.class);

  /** Tries per partition before falling back to Kafka's committed offset. */
  static final int ATTEMPTS = 3;

  private static final Duration BACKOFF = Duration.ofMillis(200);

  private final OffsetStore store;
  private final String group;
  private final Sleeper sleeper;

  /** Seeks for consumer group {@code group} from {@code store}, waiting with {@code sleeper}. */
  public StoredOffsetSeek(OffsetStore store, String group, Sleeper sleeper) {
    this.store = store;
    this.group = group;
    this.sleeper = sleeper;
  }

  @Override
  public void assigned(Consumer<byte[], byte[]> consumer, Collection<TopicPartition> assigned) {
    for (TopicPartition tp : assigned) {
      OptionalLong next = read(tp);
      if (next.isPresent()) {
        consumer.seek(tp, next.getAsLong());
        log.debug("{}: {} starts at the stored offset {}", group, tp, next.getAsLong());
      }
    }
  }

  private OptionalLong read(TopicPartition tp) {
    RuntimeException last = null;
    for (int i = 0; i < ATTEMPTS; i++) {
      try {
        return store.nextOffset(group, tp.topic(), tp.partition());
      } catch (RuntimeException e) {
        last = e;
        try {
          sleeper.sleep(BACKOFF);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    log.warn(
        "{}: cannot read the stored offset of {} ({}); it starts from Kafka's committed offset"
            + " (records below the stored offset are still skipped)",
        group,
        tp,
        String.valueOf(last));
    return OptionalLong.empty();
  }
}
