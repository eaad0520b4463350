package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.spi.OutboxRecord;

/**
 * One outbox row on its way from the slot to the broker, with its place in the stream: the commit
 * LSN of its transaction and its index within that transaction. Several rows share a commit LSN, so
 * the LSN alone cannot say which of them were acknowledged; the pair can.
 */
public record CdcEvent(long epoch, long commitLsn, int index, OutboxRecord record) {

  /** An event outside any lease epoch (tests). */
  public CdcEvent(long commitLsn, int index, OutboxRecord record) {
    this(0, commitLsn, index, record);
  }

  /**
   * Whether this row comes from the outbox table rather than the slot (the republication after a
   * lost slot): it confirms no slot position.
   */
  public boolean fromTable() {
    return commitLsn < 0;
  }
}
