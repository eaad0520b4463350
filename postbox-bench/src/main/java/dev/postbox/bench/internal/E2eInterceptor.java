package dev.postbox.bench.internal;

import dev.postbox.kafka.KafkaRecords;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * Records, inside the consumer's {@code poll}, when each record was returned and its broker append
 * stamp, in the {@link E2eTimes} named by the consumer property {@link E2eTimes#RECORDER}; and
 * drops the records without a {@code ce_id} header (the topic's probe records, {@link
 * BenchEnv#primedTopic}), which no pipeline wrote. The same for our consumer and Spring's.
 */
public final class E2eInterceptor implements ConsumerInterceptor<byte[], byte[]> {

  private E2eTimes times;

  @Override
  public void configure(Map<String, ?> configs) {
    Object id = configs.get(E2eTimes.RECORDER);
    times = id == null ? null : E2eTimes.lookup(id.toString());
  }

  @Override
  public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
    if (records.isEmpty()) {
      return records;
    }
    long now = E2eTimes.nowMicros();
    Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> kept = new HashMap<>();
    for (TopicPartition tp : records.partitions()) {
      List<ConsumerRecord<byte[], byte[]>> list = new ArrayList<>();
      for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
        Header h = r.headers().lastHeader(KafkaRecords.CE_ID);
        if (h == null) {
          continue;
        }
        if (times != null) {
          UUID id = UUID.fromString(new String(h.value(), StandardCharsets.US_ASCII));
          times.polled(id, r.timestamp(), now);
        }
        list.add(r);
      }
      if (!list.isEmpty()) {
        kept.put(tp, list);
      }
    }
    Map<TopicPartition, OffsetAndMetadata> next = records.nextOffsets();
    return new ConsumerRecords<>(kept, next);
  }

  @Override
  public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {}

  @Override
  public void close() {}
}
