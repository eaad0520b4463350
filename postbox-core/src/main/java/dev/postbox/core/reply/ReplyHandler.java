package dev.postbox.core.reply;

import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;

/**
 * A responder's work: applies one request and returns the reply's payload. Runs in the request's
 * inbox transaction ({@code EFFECTIVELY_ONCE}): do the effect on {@link Delivery#connection()}; the
 * returned payload is stored with the inbox row in that transaction and sent to the request's reply
 * address after the commit. A repeated request (a redelivery, or the requester retrying with the
 * same id) is not handed to this handler again: it gets the stored reply.
 *
 * <p>May throw like any handler: the subscription's failure handler decides (a {@code
 * PermanentMessageException} dead-letters the request, and its requester times out). For a business
 * refusal ("card declined"), return a payload that says so instead. Must be thread-safe.
 */
@FunctionalInterface
public interface ReplyHandler {
  Payload handle(Delivery request) throws Exception;
}
