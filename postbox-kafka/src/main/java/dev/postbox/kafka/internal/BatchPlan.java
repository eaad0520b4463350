package dev.postbox.kafka.internal;

import dev.postbox.core.consumer.Ordering;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * How one partition's polled records become batches, and the lanes each batch holds while it runs.
 *
 * <ul>
 *   <li>{@code KEY} ordering: a batch holds whole keys of the poll (all of a key's records in it,
 *       in offset order), packed up to the batch size in the order the keys first appear; its lanes
 *       are its keys (a record without a key: the partition's lane). A batch runs after every
 *       earlier batch holding one of its keys, so each key's records keep their order and a key is
 *       in at most one running batch, while batches of other keys of the same partition run beside
 *       it. A key with more records than the batch size fills consecutive batches, one after the
 *       other.
 *   <li>{@code PARTITION} and {@code UNORDERED}: consecutive records, the partition's lane (one
 *       batch of a partition at a time).
 * </ul>
 *
 * <p>Within a batch the records are in offset order. Stateless.
 */
final class BatchPlan {

  /** Records of one partition run as one batch, holding {@code lanes}. */
  record Batch(List<ConsumerRecord<byte[], byte[]>> records, Set<Object> lanes) {}

  private BatchPlan() {}

  /** The batches of {@code records} (one partition's, in offset order). */
  static List<Batch> of(
      TopicPartition tp,
      List<ConsumerRecord<byte[], byte[]>> records,
      int batchSize,
      Ordering ordering) {
    List<Batch> batches = new ArrayList<>();
    if (ordering != Ordering.KEY) {
      for (int i = 0; i < records.size(); i += batchSize) {
        batches.add(
            new Batch(
                List.copyOf(records.subList(i, Math.min(records.size(), i + batchSize))),
                Set.of(tp)));
      }
      return batches;
    }
    Map<Object, List<ConsumerRecord<byte[], byte[]>>> byLane = new LinkedHashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      byLane.computeIfAbsent(lane(tp, r), k -> new ArrayList<>()).add(r);
    }
    List<ConsumerRecord<byte[], byte[]>> open = new ArrayList<>();
    List<Object> openLanes = new ArrayList<>();
    for (Map.Entry<Object, List<ConsumerRecord<byte[], byte[]>>> e : byLane.entrySet()) {
      List<ConsumerRecord<byte[], byte[]>> rs = e.getValue();
      if (!open.isEmpty() && open.size() + rs.size() > batchSize) {
        batches.add(close(open, openLanes));
        open = new ArrayList<>();
        openLanes = new ArrayList<>();
      }
      for (int i = 0; i < rs.size(); i += batchSize) {
        List<ConsumerRecord<byte[], byte[]>> part =
            rs.subList(i, Math.min(rs.size(), i + batchSize));
        if (open.size() + part.size() > batchSize) { // the rest of a key larger than a batch
          batches.add(close(open, openLanes));
          open = new ArrayList<>();
          openLanes = new ArrayList<>();
        }
        open.addAll(part);
        if (openLanes.isEmpty() || openLanes.getLast() != e.getKey()) {
          openLanes.add(e.getKey());
        }
      }
    }
    if (!open.isEmpty()) {
      batches.add(close(open, openLanes));
    }
    return batches;
  }

  private static Batch close(List<ConsumerRecord<byte[], byte[]>> rs, List<Object> lanes) {
    rs.sort(Comparator.comparingLong(ConsumerRecord::offset));
    return new Batch(List.copyOf(rs), Set.copyOf(lanes));
  }

  /** The lane of a record of a key-ordered subscription: its key, or its partition without one. */
  static Object lane(TopicPartition tp, ConsumerRecord<byte[], byte[]> r) {
    return r.key() == null ? tp : new KeyLane(tp, r.key());
  }

  /**
   * A key of a partition, equal by the key's bytes. Not a record over a {@code ByteBuffer} (as
   * before): a lane is hashed and compared per record here and per batch in the executor's lane
   * map, and {@code ByteBuffer.hashCode}/{@code equals} go byte by byte through the buffer's
   * accessors, in a tenth of the poll thread's samples in a profile of the batch race (2026-12-04);
   * the hash is taken once, with {@link Arrays#hashCode(byte[])}.
   */
  static final class KeyLane {
    private final TopicPartition partition;
    private final byte[] key;
    private final int hash;

    KeyLane(TopicPartition partition, byte[] key) {
      this.partition = partition;
      this.key = key;
      this.hash = 31 * partition.hashCode() + Arrays.hashCode(key);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof KeyLane k
          && hash == k.hash
          && Arrays.equals(key, k.key)
          && partition.equals(k.partition);
    }

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public String toString() {
      // the key's length only: keys are message content, which logs never show
      return "KeyLane[" + partition + ", a key of " + key.length + " bytes]";
    }
  }
}
