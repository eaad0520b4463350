package dev.postbox.core;

/**
 * What a topic (or a subscription) promises about each message.
 *
 * <ul>
 *   <li>{@link #AT_MOST_ONCE}: published without the outbox ({@code acks=0}) and, on the consumer
 *       side, acknowledged before the handler runs. A crash may lose a message; none is ever
 *       repeated. For loss-tolerant streams (metrics, presence, cache hints).
 *   <li>{@link #AT_LEAST_ONCE}: published through the transactional outbox with {@code acks=all};
 *       acknowledged only after the handler finished. A crash may repeat a message; none is ever
 *       lost.
 *   <li>{@link #EFFECTIVELY_ONCE}: at-least-once transport plus an inbox that records the message
 *       id in the effect's own transaction, so the effect is applied exactly once per message id.
 * </ul>
 */
public enum DeliveryGuarantee {
  AT_MOST_ONCE,
  AT_LEAST_ONCE,
  EFFECTIVELY_ONCE
}
