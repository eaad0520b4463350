package dev.postbox.spring;

import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Locale;
import java.util.Optional;

/**
 * Micrometer Observations (what Spring Boot's tracing and timers are built on) of Postbox's work,
 * when the application has an {@link ObservationRegistry}: each listener delivery ({@value
 * #LISTENER}, around the handler, in its transaction, with the observation current so the handler's
 * own observed calls are its children) and each relay batch ({@value #RELAY_PUBLISH}, from the send
 * until its outcomes are in). Without a registry (or with the no-op one) nothing is wrapped. These
 * are in addition to the OpenTelemetry spans and the Micrometer meters Postbox makes itself.
 */
final class PostboxObservations {

  /** The observation of one delivery to a listener's handler. */
  static final String LISTENER = "postbox.listener";

  /** The observation of one relay batch sent to the broker. */
  static final String RELAY_PUBLISH = "postbox.relay.publish";

  private final Optional<ObservationRegistry> registry;
  private final String system;

  /**
   * Observations in {@code registry} (none when empty or no-op) of a {@code transport} application.
   */
  PostboxObservations(
      Optional<ObservationRegistry> registry, PostboxProperties.Transport transport) {
    this.registry = registry.filter(r -> !r.isNoop());
    this.system = transport.name().toLowerCase(Locale.ROOT);
  }

  /** {@code handler} of {@code subscription}, each delivery observed. */
  MessageHandler handler(Subscription subscription, MessageHandler handler) {
    if (registry.isEmpty()) {
      return handler;
    }
    ObservationRegistry r = registry.get();
    String topics = String.join(",", subscription.topics());
    return new MessageHandler() {
      @Override
      public void handle(Delivery delivery) throws Exception {
        Observation o =
            Observation.createNotStarted(LISTENER, r)
                .contextualName("postbox listener " + subscription.name())
                .lowCardinalityKeyValue("postbox.listener.id", subscription.name())
                .lowCardinalityKeyValue("messaging.system", system)
                .lowCardinalityKeyValue("messaging.destination.name", topics)
                .lowCardinalityKeyValue("postbox.message.type", delivery.message().type())
                .highCardinalityKeyValue("messaging.message.id", delivery.message().id().toString())
                .highCardinalityKeyValue("postbox.attempt", Integer.toString(delivery.attempt()));
        o.observeChecked(() -> handler.handle(delivery));
      }

      @Override
      public void completed(Delivery delivery, Optional<Payload> result, boolean duplicate)
          throws Exception {
        handler.completed(delivery, result, duplicate);
      }

      @Override
      public String toString() {
        return handler.toString();
      }
    };
  }

  /** {@code publisher}, each batch observed. */
  RelayPublisher relayPublisher(RelayPublisher publisher) {
    return registry
        .<RelayPublisher>map(r -> new ObservedRelayPublisher(publisher, r, system))
        .orElse(publisher);
  }
}
