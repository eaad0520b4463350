package dev.postbox.rabbitmq;

import dev.postbox.core.consumer.OrderedSubscriberBuilder;
import dev.postbox.core.consumer.SubscriberBuilder;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.rabbitmq.internal.BrokerDeadLetters;
import dev.postbox.rabbitmq.internal.ParkedDeliveries;
import dev.postbox.rabbitmq.internal.WaitQueues;
import java.util.Optional;

/**
 * Wires a {@link RabbitSubscriber}'s delivery processor from its builder's settings: the handlers,
 * the inbox or idempotency store, dead letters (also to the broker's dead-letter exchange when one
 * is set), ordered parking, the wait queues' retries, time, metrics and tracing.
 */
final class RabbitDeliveryProcessor {

  private RabbitDeliveryProcessor() {}

  static DeliveryProcessor build(
      Subscription subscription,
      SubscriberBuilder.Common common,
      OrderedSubscriberBuilder.Ordered ordered,
      boolean brokerDeadLetterExchange,
      WaitQueues waitQueues) {
    return DeliveryProcessor.builder(RabbitBinding.TRANSPORT, subscription)
        .handler(common.handler().orElse(null))
        .batchHandler(ordered.batchHandler().orElse(null))
        .inbox(common.inbox())
        .idempotency(
            common
                .idempotencyStore()
                .map(store ->
                    new DeliveryProcessor.Idempotency(
                        store, common.onDuplicate(), common.sleeper())))
        .deadLetters(
            brokerDeadLetterExchange
                ? Optional.of(new BrokerDeadLetters(common.deadLetters(), waitQueues))
                : common.deadLetters())
        .parking(
            ordered
                .parking()
                .map(p ->
                    new DeliveryProcessor.Parking(
                        p,
                        ordered.parkingTiers(),
                        ordered.blockKeyAfterDeadLetter(),
                        ParkedDeliveries::of)))
        .retriesExhausted(waitQueues.enabled() ? Optional.of(waitQueues) : Optional.empty())
        .time(common.clock(), common.ticker(), common.sleeper())
        .metrics(common.metrics())
        .openTelemetry(common.openTelemetry().orElse(null))
        .build();
  }
}
