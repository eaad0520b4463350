package dev.postbox.rabbitmq;

import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.ConsumerAgeReporter;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.InboxJanitor;
import dev.postbox.core.engine.ParkedDrainer;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.rabbitmq.internal.Housekeeping;
import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * Starts a {@link RabbitSubscriber}'s background work beside its consumers, each on its own named
 * thread while {@code running}: the inbox janitor (with an inbox; interrupted at close), the age
 * reporter and the parked-key drainer (with parking; both joined at close, so that their last round
 * finishes).
 */
final class SubscriberChores {

  private SubscriberChores() {}

  static void start(
      Housekeeping housekeeping,
      Subscription subscription,
      Optional<InboxStore> purgedInbox,
      Duration inboxPurgeInterval,
      Optional<ConsumerAgeReporter> ageReporter,
      Optional<DeliveryProcessor> parking,
      Sleeper sleeper,
      BooleanSupplier running) {
    String name = subscription.name();
    purgedInbox.ifPresent(store ->
        housekeeping.start(
            "postbox-inbox-purge-" + name,
            new InboxJanitor(
                store, name, subscription.inboxRetention(), inboxPurgeInterval, sleeper, running)));
    ageReporter.ifPresent(r -> housekeeping.startJoined("postbox-age-report-" + name, r));
    parking.ifPresent(p ->
        housekeeping.startJoined(
            "postbox-unpark-" + name, new ParkedDrainer(name, p::drainParked, sleeper, running)));
  }
}
