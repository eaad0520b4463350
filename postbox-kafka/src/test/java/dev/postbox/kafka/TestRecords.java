package dev.postbox.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/** Builds consumer records for tests, as a consumer would see them. */
final class TestRecords {

  static final long TIMESTAMP = 1_714_558_530_000L; // 2024-05-01T10:15:30Z

  private TestRecords() {}

  /** {@code produced} as read back from partition 3, offset 42, with a create-time timestamp. */
  static <K> ConsumerRecord<K, byte[]> consumed(ProducerRecord<K, byte[]> produced) {
    return consumed(produced.topic(), produced.key(), produced.headers(), produced.value());
  }

  static <K> ConsumerRecord<K, byte[]> consumed(
      String topic, K key, Headers headers, byte[] value) {
    return consumed(topic, key, headers, value, TIMESTAMP);
  }

  static <K> ConsumerRecord<K, byte[]> consumed(
      String topic, K key, Headers headers, byte[] value, long timestamp) {
    return new ConsumerRecord<>(
        topic,
        3,
        42L,
        timestamp,
        timestamp < 0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME,
        -1,
        -1,
        key,
        value,
        headers,
        Optional.empty());
  }

  /** Headers from name/value pairs; a {@code null} value makes a header with a null value. */
  static Headers headers(String... namesAndValues) {
    RecordHeaders h = new RecordHeaders();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      String v = namesAndValues[i + 1];
      h.add(namesAndValues[i], v == null ? null : v.getBytes(StandardCharsets.UTF_8));
    }
    return h;
  }

  /** Headers from map entries, in iteration order. */
  static Headers headers(Iterable<java.util.Map.Entry<String, String>> entries) {
    RecordHeaders h = new RecordHeaders();
    for (var e : entries) {
      h.add(
          e.getKey(), e.getValue() == null ? null : e.getValue().getBytes(StandardCharsets.UTF_8));
    }
    return h;
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
