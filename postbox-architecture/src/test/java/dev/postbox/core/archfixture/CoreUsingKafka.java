package dev.postbox.core.archfixture;

import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Breaks "core names no transport" on purpose: a class in core's package that uses a Kafka type.
 */
public final class CoreUsingKafka {
  private CoreUsingKafka() {}

  public static String topicOf(ProducerRecord<String, String> record) {
    return record.topic();
  }
}
