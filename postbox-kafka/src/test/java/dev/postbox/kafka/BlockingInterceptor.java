package dev.postbox.kafka;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer interceptor that holds the poll thread of its consumer after the first poll that
 * returned records, before they reach the subscriber (so before its commit), until released. One
 * test at a time.
 */
public final class BlockingInterceptor implements ConsumerInterceptor<byte[], byte[]> {

  static volatile CountDownLatch held = new CountDownLatch(1);
  static volatile CountDownLatch release = new CountDownLatch(1);

  static void reset() {
    held = new CountDownLatch(1);
    release = new CountDownLatch(1);
  }

  @Override
  public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
    if (!records.isEmpty() && held.getCount() > 0) {
      held.countDown();
      Effects.awaitQuietly(release);
    }
    return records;
  }

  @Override
  public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {}

  @Override
  public void close() {}

  @Override
  public void configure(Map<String, ?> configs) {}
}
