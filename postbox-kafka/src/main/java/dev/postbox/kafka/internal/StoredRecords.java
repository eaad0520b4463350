package dev.postbox.kafka.internal;

import dev.postbox.core.spi.DeadLetterStore;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/**
 * A Kafka record rebuilt from bytes Postbox stored (a dead letter, a parked record, a retry-topic
 * copy), so that the one {@code KafkaRecords} mapping decodes it exactly as it decoded the
 * original.
 */
public final class StoredRecords {

  private StoredRecords() {}

  /** The record at {@code topic-partition@offset} with these key, value and headers (in order). */
  public static ConsumerRecord<byte[], byte[]> rebuild(
      String topic,
      int partition,
      long offset,
      long timestamp,
      byte[] key,
      byte[] value,
      List<DeadLetterStore.Header> headers) {
    RecordHeaders h = new RecordHeaders();
    for (DeadLetterStore.Header header : headers) {
      h.add(header.name(), header.value());
    }
    return new ConsumerRecord<>(
        topic,
        partition,
        offset,
        timestamp,
        TimestampType.NO_TIMESTAMP_TYPE,
        key == null ? ConsumerRecord.NULL_SIZE : key.length,
        value == null ? ConsumerRecord.NULL_SIZE : value.length,
        key,
        value,
        h,
        Optional.empty());
  }
}
