package dev.postbox.kafka;

import dev.postbox.core.reply.InvalidRequestException;

/**
 * A Kafka reply address: the reply topic and the partition the requester reads, written {@code
 * topic:partition} in a request's {@code reply-to} header (a topic name cannot contain a colon).
 *
 * @param topic the reply topic
 * @param partition the requester's partition of it
 */
public record KafkaReplyAddress(String topic, int partition) {

  public KafkaReplyAddress {
    if (topic == null || topic.isBlank() || topic.contains(":")) {
      throw new IllegalArgumentException("not a reply topic: " + topic);
    }
    if (partition < 0) {
      throw new IllegalArgumentException("partition must not be negative: " + partition);
    }
  }

  /**
   * The address in a {@code reply-to} header.
   *
   * @throws InvalidRequestException if it is not {@code topic:partition}
   */
  public static KafkaReplyAddress parse(String replyTo) {
    int colon = replyTo.lastIndexOf(':');
    try {
      return new KafkaReplyAddress(
          replyTo.substring(0, colon), Integer.parseInt(replyTo.substring(colon + 1)));
    } catch (RuntimeException e) {
      throw new InvalidRequestException(
          "reply-to '" + replyTo + "' is not a Kafka reply address (topic:partition)");
    }
  }

  @Override
  public String toString() {
    return topic + ":" + partition;
  }
}
