package dev.postbox.jdbc;

/**
 * Which consumers a {@link Replayer} replay reaches.
 *
 * <p>A dead letter belongs to one consumer (the subscription that gave up on it); every other
 * consumer of its topic applied the message already. Writing the message to the topic again without
 * a target would make each of them receive it a second time, and any of them that is at-least-once
 * without an inbox, or whose dedupe record has expired (the inbox retention), would apply it twice.
 */
public enum ReplayRoute {
  /**
   * The default: only the consumer that dead-lettered the message applies the replay. The copy
   * carries that consumer's name ({@link dev.postbox.core.ReplayHeaders#TARGET}); the relay
   * publishes it to the consumer's own route where the transport has one (RabbitMQ: the
   * subscription's exchange, so it lands on its shard queue by key), else to the topic (Kafka), and
   * every other consumer passes over it without applying it.
   */
  TARGETED,

  /**
   * Every consumer of the topic receives the replay again, as if the message were published anew
   * (consumers with an inbox that still holds its id suppress it; the others apply it again). Only
   * for a message every consumer must see again; the replayer logs a warning and the audit row's
   * reason says {@code broadcast}.
   */
  BROADCAST
}
