package dev.postbox.spring;

import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import java.util.Objects;

/**
 * A consumer the starter runs: a subscription and its handler. Declare one as a bean to give the
 * subscription explicitly (its own guarantee, retries, ordering); {@link PostboxListener} methods
 * become consumers whose subscription comes from the delivery table.
 *
 * @param subscription what to read and how
 * @param handler what to do with each message
 */
public record PostboxConsumer(Subscription subscription, MessageHandler handler) {
  public PostboxConsumer {
    Objects.requireNonNull(subscription, "subscription");
    Objects.requireNonNull(handler, "handler");
  }
}
