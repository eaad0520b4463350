/**
 * Postbox on Kafka: {@link dev.postbox.kafka.KafkaRecords} maps messages to and from records in
 * CloudEvents binary content mode.
 */
package dev.postbox.kafka;
