package dev.postbox.kafka;

import dev.postbox.core.PostboxException;

/**
 * Kept with a record of a share group that the broker delivered more times than the subscriber's
 * {@code maxDeliveries}: its earlier deliveries ended without an outcome (the consumer crashed, its
 * acquisition lock expired, or it was released at shutdown), so it is dead-lettered instead of run
 * again.
 */
public final class DeliveryCountExceededException extends PostboxException {

  private static final long serialVersionUID = 1L;

  /** For a record delivered {@code deliveries} times, above {@code maxDeliveries}. */
  public DeliveryCountExceededException(int deliveries, int maxDeliveries) {
    super(
        "delivered "
            + deliveries
            + " times (more than maxDeliveries "
            + maxDeliveries
            + ") without an outcome: the earlier deliveries crashed, timed out or were released");
  }
}
