package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.InboxJanitor;
import dev.postbox.core.engine.ParkedDrainer;
import java.util.function.BooleanSupplier;

/**
 * A subscriber's threads beside the poll thread: the unpark thread ({@link ParkedDrainer}, with
 * parking) and the inbox purge thread ({@link InboxJanitor}, with an inbox). Started once, stopped
 * once.
 */
final class SideThreads {

  private final Thread unpark;
  private final Thread purge;

  private SideThreads(Thread unpark, Thread purge) {
    this.unpark = unpark;
    this.purge = purge;
  }

  /** Starts the threads {@code settings} need; they run while {@code running}. */
  static SideThreads start(
      KafkaSubscriberSettings settings, DeliveryProcessor processor, BooleanSupplier running) {
    String name = settings.subscription().name();
    Thread unpark = null;
    if (settings.parking().isPresent()) {
      unpark =
          Thread.ofVirtual()
              .name("postbox-unpark-" + name)
              .start(new ParkedDrainer(name, processor::drainParked, settings.sleeper(), running));
    }
    Thread purge = null;
    if (settings.subscription().guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE
        && settings.inbox().isPresent()) {
      purge =
          Thread.ofVirtual()
              .name("postbox-inbox-purge-" + name)
              .start(
                  new InboxJanitor(
                      settings.inbox().orElseThrow(),
                      name,
                      settings.subscription().inboxRetention(),
                      settings.inboxPurgeInterval(),
                      settings.sleeper(),
                      running));
    }
    return new SideThreads(unpark, purge);
  }

  /**
   * Stops the purge thread and waits for the unpark thread (at most the shutdown timeout + 1 s).
   */
  void stop(KafkaSubscriberSettings settings) {
    if (purge != null) {
      purge.interrupt();
    }
    if (unpark != null) {
      try {
        unpark.join(settings.subscription().shutdownTimeout().toMillis() + 1_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
