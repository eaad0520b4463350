package dev.postbox.core.engine;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor.Parking;
import dev.postbox.core.engine.DeliveryProcessor.RetriesExhausted;
import dev.postbox.core.spi.InboxStore;
import java.util.Optional;

/**
 * Refuses an offset store where offsets would not be applied in order: positions dedupe only when
 * each partition's records are applied one after another in offset order, so the mode needs an
 * {@code EFFECTIVELY_ONCE} subscription with {@code PARTITION} ordering and a batch size of 1, and
 * neither parking nor retry topics (both apply a record after later ones of its partition, which
 * would then count it as applied), and no inbox beside it.
 */
final class OffsetStoreChecks {

  private OffsetStoreChecks() {}

  /**
   * @throws IllegalArgumentException naming the first misfit
   */
  static void check(
      Subscription subscription,
      Optional<InboxStore> inbox,
      Optional<Parking> parking,
      Optional<RetriesExhausted> retriesExhausted) {
    String name = "subscription '" + subscription.name() + "' keeps its offsets in a store";
    if (subscription.guarantee() != DeliveryGuarantee.EFFECTIVELY_ONCE) {
      throw new IllegalArgumentException(
          name + " and must be EFFECTIVELY_ONCE, not " + subscription.guarantee());
    }
    if (subscription.ordering() != Ordering.PARTITION) {
      throw new IllegalArgumentException(
          name + " and needs PARTITION ordering, not " + subscription.ordering());
    }
    if (subscription.batchSize() != 1) {
      throw new IllegalArgumentException(name + " and needs a batch size of 1");
    }
    if (inbox.isPresent()) {
      throw new IllegalArgumentException(name + "; an inbox beside it is an alternative, not both");
    }
    if (parking.isPresent() || retriesExhausted.isPresent()) {
      throw new IllegalArgumentException(
          name + "; parking and retry topics apply records out of offset order: use dead letters");
    }
  }
}
