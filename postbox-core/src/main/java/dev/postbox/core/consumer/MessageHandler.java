package dev.postbox.core.consumer;

/**
 * Applies one message. May throw anything: the subscription's {@link FailureHandler} decides
 * whether to retry or to give up. Called concurrently for different keys (see {@link Ordering});
 * must be thread-safe.
 */
@FunctionalInterface
public interface MessageHandler {
  void handle(Delivery delivery) throws Exception;
}
