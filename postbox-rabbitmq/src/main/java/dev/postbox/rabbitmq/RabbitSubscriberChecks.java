package dev.postbox.rabbitmq;

import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;

/**
 * The checks {@link RabbitSubscriber.Builder#build()} makes of a subscription's settings on
 * RabbitMQ: what is refused (with the reason) and the prefetch a batch needs.
 */
final class RabbitSubscriberChecks {

  private RabbitSubscriberChecks() {}

  /**
   * Throws {@link IllegalArgumentException} for settings RabbitMQ cannot honour; returns the
   * prefetch to use (raised to the batch size for batches).
   */
  static int validate(
      Subscription subscription,
      boolean hasHandler,
      boolean hasBatchHandler,
      int prefetch,
      boolean prefetchSet,
      boolean hasParking,
      boolean hasRetryTiers) {
    String name = "subscription '" + subscription.name() + "'";
    int batchSize = subscription.batchSize();
    if (batchSize > 1) {
      if (!hasBatchHandler) {
        throw new IllegalArgumentException(name + " has batchSize > 1 and needs a batchHandler");
      }
      if (prefetchSet && prefetch < batchSize) {
        throw new IllegalArgumentException(
            name
                + ": prefetch "
                + prefetch
                + " is below the batch size "
                + batchSize
                + "; a batch is formed from the unacked deliveries, so set prefetch >= batchSize");
      }
      if (hasParking) {
        throw new IllegalArgumentException(
            name
                + ": batches and parking are not supported together on RabbitMQ (a batch is not"
                + " parked behind a parked key); use batch size 1 or no parking");
      }
      if (hasRetryTiers) {
        throw new IllegalArgumentException(
            name
                + ": batches and retryTiers (wait queues) are not supported together on"
                + " RabbitMQ; use batch size 1 or no retryTiers");
      }
      prefetch = Math.max(prefetch, batchSize);
    }
    if (hasRetryTiers && subscription.ordering() != Ordering.UNORDERED) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription.name()
              + "': retryTiers (wait queues) need Ordering.UNORDERED: a retried message comes"
              + " back behind later messages of its key");
    }
    if (batchSize == 1 && !hasHandler) {
      throw new IllegalArgumentException(
          "subscription '" + subscription.name() + "' needs a handler");
    }
    if (hasParking && hasRetryTiers) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription.name()
              + "': parking and retryTiers are alternatives; choose one");
    }
    return prefetch;
  }

  /**
   * Fails unless the age reports are consistent: an interval only with a store to report to, and at
   * least 100 ms.
   */
  static void checkAgeReports(
      String subscription, boolean intervalSet, boolean hasStore, java.time.Duration interval) {
    if (intervalSet && !hasStore) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription
              + "': ageReportInterval is set but there is no ageStore to report to");
    }
    if (interval.compareTo(java.time.Duration.ofMillis(100)) < 0) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription
              + "': ageReportInterval must be at least 100 ms, was "
              + interval);
    }
  }
}
