package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.spi.OutboxRecord;
import java.time.Instant;
import java.util.List;

/**
 * One committed transaction as the slot streamed it: the outbox rows it inserted, in insert order.
 *
 * @param commitLsn the LSN of its commit record (unique per transaction, increasing in commit
 *     order)
 * @param endLsn the LSN just past its commit record: confirming it to the slot means "everything up
 *     to and including this transaction is done"
 * @param commitTime its commit time as the server recorded it (null when unknown)
 * @param records the outbox rows it inserted (may be empty: a transaction that wrote no outbox row)
 */
public record CdcTransaction(
    long commitLsn, long endLsn, Instant commitTime, List<OutboxRecord> records) {
  public CdcTransaction {
    records = List.copyOf(records);
  }

  /** A transaction without a known commit time. */
  public CdcTransaction(long commitLsn, long endLsn, List<OutboxRecord> records) {
    this(commitLsn, endLsn, null, records);
  }
}
