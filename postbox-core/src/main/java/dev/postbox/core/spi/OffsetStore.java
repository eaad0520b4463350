package dev.postbox.core.spi;

import java.sql.Connection;
import java.util.OptionalLong;

/**
 * Consumer positions kept in the effect's own database transaction: for each (group, topic,
 * partition) the next offset to apply. The alternative to an {@link InboxStore} for handlers that
 * read a partition in order: one row per partition instead of one per message, nothing to purge.
 * {@code postbox-jdbc} implements it for PostgreSQL ({@code postbox_consumer_offset}).
 *
 * <p>{@link #applyAt} locks the partition's row, skips a record whose offset is below the stored
 * next offset (applied before, by this or any other instance), and otherwise runs the effect and
 * stores {@code offset + 1} in the same transaction. A consumer seeks each newly assigned partition
 * to {@link #nextOffset}, so the transport's own committed offsets are never needed for
 * correctness. Dedupe is by position, not by message id: the same message at another offset (a
 * relay's republish) is applied again.
 *
 * <p>Implementations must be thread-safe.
 */
public interface OffsetStore {

  /** The stored next offset of {@code group} on {@code topic}-{@code partition}, if any. */
  OptionalLong nextOffset(String group, String topic, int partition);

  /**
   * In one transaction: locks the partition's row; if {@code offset} is below the stored next
   * offset, returns {@code false} without running {@code work}; otherwise runs {@code work} on the
   * same connection, stores {@code offset + 1} and commits, returning {@code true}. If {@code work}
   * throws, rolls back and rethrows.
   */
  boolean applyAt(String group, String topic, int partition, long offset, InboxStore.Work work)
      throws Exception;

  /** As {@link InboxStore#advanceVersion}: in the caller's transaction on {@code connection}. */
  boolean advanceVersion(Connection connection, String entity, long version) throws Exception;
}
