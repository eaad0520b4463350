package dev.postbox.core.consumer;

/**
 * How a subscription orders the processing of records.
 *
 * <ul>
 *   <li>{@link #KEY} (default): records of one key (within a partition) are handled strictly in
 *       order; different keys run concurrently, up to the subscription's concurrency, even within
 *       one partition. Records without a key keep partition order.
 *   <li>{@link #PARTITION}: one record at a time per partition, in offset order.
 *   <li>{@link #UNORDERED}: any record may run alongside any other; for handlers that are
 *       commutative.
 * </ul>
 */
public enum Ordering {
  KEY,
  PARTITION,
  UNORDERED
}
