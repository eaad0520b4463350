package dev.postbox.core.engine;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor.Idempotency;
import dev.postbox.core.engine.DeliveryProcessor.Parking;
import dev.postbox.core.engine.DeliveryProcessor.RetriesExhausted;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import java.util.Optional;

/**
 * Refuses a processor whose parts do not fit its subscription (a guarantee without its store,
 * parking and retry topics together, parking without order or tiers, no handler), before anything
 * runs.
 */
final class ProcessorChecks {

  private ProcessorChecks() {}

  /**
   * @throws IllegalArgumentException naming the first misfit, in the order listed above
   */
  static void check(
      Subscription subscription,
      MessageHandler handler,
      BatchHandler batchHandler,
      Optional<InboxStore> inbox,
      Optional<OffsetStore> offsets,
      Optional<Idempotency> idempotency,
      Optional<Parking> parking,
      Optional<RetriesExhausted> retriesExhausted) {
    if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED && idempotency.isEmpty()) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription.name()
              + "' is DEDUPLICATED and needs an IdempotencyStore");
    }
    if (parking.isPresent() && retriesExhausted.isPresent()) {
      throw new IllegalArgumentException(
          "ordered parking and retry topics are alternatives; subscription '"
              + subscription.name()
              + "' has both");
    }
    if (parking.isPresent() && subscription.ordering() == Ordering.UNORDERED) {
      throw new IllegalArgumentException(
          "ordered parking needs KEY or PARTITION ordering; subscription '"
              + subscription.name()
              + "' is UNORDERED");
    }
    if (parking.isPresent() && parking.get().tiers().isEmpty()) {
      throw new IllegalArgumentException("parking needs at least one delay tier");
    }
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE
        && inbox.isEmpty()
        && offsets.isEmpty()) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription.name()
              + "' is EFFECTIVELY_ONCE and needs an InboxStore or an OffsetStore");
    }
    if (offsets.isPresent()) {
      OffsetStoreChecks.check(subscription, inbox, parking, retriesExhausted);
    }
    if (handler == null && batchHandler == null) {
      throw new IllegalArgumentException("a handler or a batch handler is required");
    }
  }
}
