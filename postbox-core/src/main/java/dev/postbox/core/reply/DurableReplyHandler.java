package dev.postbox.core.reply;

import dev.postbox.core.consumer.Delivery;

/**
 * Handles the reply to a durable request ({@link DurableRequests}) in the reply's inbox
 * transaction: do the work on {@link Delivery#connection()}, and it commits with the reply's inbox
 * row, so the reply is processed once however often it arrives (a responder resends the same reply,
 * with the same id, for a repeated request). Must be thread-safe.
 */
@FunctionalInterface
public interface DurableReplyHandler {

  /** Processes {@code reply} (its {@link Reply#requestId()} is the request's id). */
  void handle(Reply reply, Delivery delivery) throws Exception;
}
