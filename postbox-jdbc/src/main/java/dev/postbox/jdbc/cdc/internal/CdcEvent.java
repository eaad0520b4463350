package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.spi.OutboxRecord;

/**
 * One outbox row on its way from the slot to the broker, with its place in the stream: the commit
 * LSN of its transaction and its index within that transaction. Several rows share a commit LSN, so
 * the LSN alone cannot say which of them were acknowledged; the pair can.
 */
public record CdcEvent(long commitLsn, int index, OutboxRecord record) {}
