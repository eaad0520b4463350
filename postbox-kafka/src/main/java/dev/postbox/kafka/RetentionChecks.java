package dev.postbox.kafka;

import dev.postbox.core.consumer.Subscription;
import java.time.Duration;
import java.util.Map;

/**
 * Refuses, at a subscriber's start, a dedupe memory (inbox retention, idempotency TTL) shorter than
 * the retention of a topic it reads: a message redelivered after its dedupe record is gone would be
 * applied twice. Stateless.
 */
final class RetentionChecks {

  private RetentionChecks() {}

  /**
   * A dedupe record must outlive every copy of its message that Kafka can still deliver: if it is
   * purged while the topic still holds the message, a redelivery (a rebalance, an offset reset, a
   * replay) applies it a second time.
   *
   * @throws InboxRetentionTooShortException if it does not, unless {@code force}
   */
  static void checkInboxRetention(
      Map<String, Object> config, Subscription subscription, boolean force) {
    Map<String, Long> retention = KafkaTopics.retentionMillis(config, subscription.topics());
    for (Map.Entry<String, Long> e : retention.entrySet()) {
      long topicMs = e.getValue();
      long inboxMs = subscription.inboxRetention().toMillis();
      boolean tooShort = topicMs < 0 || inboxMs < topicMs;
      if (tooShort && !force) {
        throw new InboxRetentionTooShortException(
            "subscription '"
                + subscription.name()
                + "' keeps dedupe records for "
                + subscription.inboxRetention()
                + " but topic '"
                + e.getKey()
                + "' keeps messages "
                + (topicMs < 0 ? "forever" : "for " + Duration.ofMillis(topicMs))
                + ": a message redelivered after its dedupe record was purged would be applied twice."
                + " Raise inboxRetention to at least the topic's retention.ms, or force it with"
                + " forceInboxRetention(true) if redelivery of old messages cannot happen.");
      }
    }
  }

  /**
   * The same rule for the idempotency store: a completed message id must be remembered as long as
   * the topic can deliver the message again.
   *
   * @throws IdempotencyTtlTooShortException if it is not, unless {@code force}
   */
  static void checkIdempotencyTtl(
      Map<String, Object> config, Subscription subscription, boolean force) {
    Map<String, Long> retention = KafkaTopics.retentionMillis(config, subscription.topics());
    for (Map.Entry<String, Long> e : retention.entrySet()) {
      long topicMs = e.getValue();
      boolean tooShort = topicMs < 0 || subscription.idempotencyTtl().toMillis() < topicMs;
      if (tooShort && !force) {
        throw new IdempotencyTtlTooShortException(
            "subscription '"
                + subscription.name()
                + "' keeps completed message ids for "
                + subscription.idempotencyTtl()
                + " but topic '"
                + e.getKey()
                + "' keeps messages "
                + (topicMs < 0 ? "forever" : "for " + Duration.ofMillis(topicMs))
                + ": a message redelivered after its key expired would be applied twice."
                + " Raise idempotencyTtl to at least the topic's retention.ms, or force it with"
                + " forceIdempotencyTtl(true) if redelivery of old messages cannot happen.");
      }
    }
  }
}
