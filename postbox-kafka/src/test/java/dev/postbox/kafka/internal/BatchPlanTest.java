package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.consumer.Ordering;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class BatchPlanTest {

  private static final TopicPartition TP = new TopicPartition("t", 0);

  @Test
  void keyOrderedBatchesHoldWholeKeysInOffsetOrderAndNoKeyTwice() {
    List<ConsumerRecord<byte[], byte[]>> rs = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      rs.add(record(i, "k" + (i % 40))); // 40 keys, 12 or 13 records each
    }
    List<BatchPlan.Batch> batches = BatchPlan.of(TP, rs, 100, Ordering.KEY);

    assertThat(batches).hasSizeGreaterThanOrEqualTo(5);
    Map<String, Integer> batchOfKey = new HashMap<>();
    int total = 0;
    for (int b = 0; b < batches.size(); b++) {
      BatchPlan.Batch batch = batches.get(b);
      assertThat(batch.records()).hasSizeLessThanOrEqualTo(100);
      assertThat(batch.records())
          .extracting(ConsumerRecord::offset)
          .as("offset order within a batch")
          .isSorted();
      Set<Object> keys = new HashSet<>();
      for (ConsumerRecord<byte[], byte[]> r : batch.records()) {
        String key = new String(r.key(), StandardCharsets.UTF_8);
        Integer earlier = batchOfKey.putIfAbsent(key, b);
        assertThat(earlier == null || earlier == b).as("key " + key + " in one batch").isTrue();
        keys.add(BatchPlan.lane(TP, r));
      }
      assertThat(batch.lanes()).as("a batch holds the lanes of its keys").isEqualTo(keys);
      total += batch.records().size();
    }
    assertThat(total).isEqualTo(500);
  }

  @Test
  void lanesAreEqualByPartitionAndKeyBytesNotByArray() {
    ConsumerRecord<byte[], byte[]> a = record(0, "order-7");
    ConsumerRecord<byte[], byte[]> sameKey = record(1, "order-7"); // another array, same bytes
    ConsumerRecord<byte[], byte[]> otherKey = record(2, "order-8");
    TopicPartition otherPartition = new TopicPartition("t", 1);

    assertThat(BatchPlan.lane(TP, a))
        .isEqualTo(BatchPlan.lane(TP, sameKey))
        .hasSameHashCodeAs(BatchPlan.lane(TP, sameKey))
        .isNotEqualTo(BatchPlan.lane(TP, otherKey))
        .isNotEqualTo(BatchPlan.lane(otherPartition, sameKey));
    assertThat(BatchPlan.lane(TP, a).toString())
        .as("a lane names no key content (keys are message content)")
        .doesNotContain("order");
    ConsumerRecord<byte[], byte[]> noKey =
        new ConsumerRecord<>(TP.topic(), TP.partition(), 3, null, new byte[0]);
    assertThat(BatchPlan.lane(TP, noKey)).as("no key: the partition's lane").isEqualTo(TP);
  }

  @Test
  void aKeyLargerThanABatchFillsConsecutiveBatchesThatShareItsLane() {
    List<ConsumerRecord<byte[], byte[]>> rs = new ArrayList<>();
    for (int i = 0; i < 250; i++) {
      rs.add(record(i, i % 5 == 0 ? "small" : "big")); // 200 records of "big"
    }
    List<BatchPlan.Batch> batches = BatchPlan.of(TP, rs, 100, Ordering.KEY);

    List<Long> bigOffsets = new ArrayList<>();
    int withBig = 0;
    for (BatchPlan.Batch b : batches) {
      assertThat(b.records()).hasSizeLessThanOrEqualTo(100);
      boolean hasBig = false;
      for (ConsumerRecord<byte[], byte[]> r : b.records()) {
        if (new String(r.key(), StandardCharsets.UTF_8).equals("big")) {
          bigOffsets.add(r.offset());
          hasBig = true;
        }
      }
      if (hasBig) {
        withBig++;
        assertThat(b.lanes()).contains(BatchPlan.lane(TP, rs.get(1)));
      }
    }
    assertThat(withBig).isGreaterThan(1);
    assertThat(bigOffsets).as("the big key's records, in order over its batches").isSorted();
    assertThat(bigOffsets).hasSize(200);
  }

  @Test
  void recordsWithoutKeyShareThePartitionsLane() {
    List<ConsumerRecord<byte[], byte[]>> rs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      rs.add(record(i, null));
    }
    List<BatchPlan.Batch> batches = BatchPlan.of(TP, rs, 4, Ordering.KEY);
    assertThat(batches).hasSize(3);
    assertThat(batches).allSatisfy(b -> assertThat(b.lanes()).containsExactly(TP));
  }

  @Test
  void partitionOrderedBatchesAreConsecutiveRecordsOnThePartitionsLane() {
    List<ConsumerRecord<byte[], byte[]>> rs = new ArrayList<>();
    for (int i = 0; i < 250; i++) {
      rs.add(record(i, "k" + (i % 7)));
    }
    List<BatchPlan.Batch> batches = BatchPlan.of(TP, rs, 100, Ordering.PARTITION);
    assertThat(batches).hasSize(3);
    assertThat(batches.get(0).records()).extracting(ConsumerRecord::offset).startsWith(0L, 1L, 2L);
    assertThat(batches.get(2).records()).hasSize(50);
    assertThat(batches).allSatisfy(b -> assertThat(b.lanes()).containsExactly(TP));
  }

  private static ConsumerRecord<byte[], byte[]> record(long offset, String key) {
    return new ConsumerRecord<>(
        TP.topic(),
        TP.partition(),
        offset,
        key == null ? null : key.getBytes(StandardCharsets.UTF_8),
        new byte[0]);
  }
}
