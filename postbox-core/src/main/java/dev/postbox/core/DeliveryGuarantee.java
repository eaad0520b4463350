package dev.postbox.core;

/**
 * What a topic (or a subscription) promises about each message.
 *
 * <ul>
 *   <li>{@link #AT_MOST_ONCE}: published without the outbox ({@code acks=0}) and, on the consumer
 *       side, acknowledged before the handler runs. A crash may lose a message; none is ever
 *       repeated, not even after a handler failure: a failed handler is not run again (no in-place
 *       retry, retry topic, wait queue or parking), the message is given up at its first failure
 *       (into the dead letters, if the subscriber has a store). For loss-tolerant streams (metrics,
 *       presence, cache hints).
 *   <li>{@link #AT_LEAST_ONCE}: published through the transactional outbox with {@code acks=all};
 *       acknowledged only after the handler finished. A crash may repeat a message; none is ever
 *       lost.
 *   <li>{@link #EFFECTIVELY_ONCE}: at-least-once transport plus an inbox that records the message
 *       id in the effect's own transaction, so the effect is applied exactly once per message id.
 *   <li>{@link #DEDUPLICATED}: at-least-once transport plus an outside idempotency store (Redis,
 *       say: {@code IdempotencyStore}) for handlers with no transactional database (an HTTP call, a
 *       search index, an email). The message id is claimed with a lease before the handler runs and
 *       completed with the handler's result and a TTL after it; a duplicate is suppressed with the
 *       stored result; a concurrent duplicate waits for the lease, never runs in parallel.
 *       <b>At-risk window:</b> a crash after the effect and before the completion is written
 *       repeats the effect once the lease expires (counted by {@code
 *       postbox.consumer.idempotency.lease.expired}). Pass {@code IdempotencyKeys.of(message)} to
 *       an outside system that honours an idempotency key to close the window there.
 * </ul>
 */
public enum DeliveryGuarantee {
  AT_MOST_ONCE,
  AT_LEAST_ONCE,
  EFFECTIVELY_ONCE,
  DEDUPLICATED
}
