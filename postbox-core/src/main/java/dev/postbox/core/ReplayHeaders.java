package dev.postbox.core;

import java.util.Objects;
import java.util.Optional;

/**
 * The headers an operator's replay of a dead letter puts on the copy it writes ({@code Replayer} in
 * {@code postbox-jdbc}), and the one rule every consumer applies to them.
 *
 * <p>A replayed copy says it is a replay: {@value #DEAD_LETTER} (the dead letter's id) and {@value
 * #REPLAYED_BY} (the operator). A <b>targeted</b> replay (the default) also names the consumer that
 * dead-lettered the message in {@value #TARGET}: the relay publishes it to that consumer's own
 * route where the transport has one (RabbitMQ: the subscription's consistent-hash exchange), else
 * to the topic (Kafka), and every consumer whose subscription name is not the target finishes the
 * copy without applying it ({@link #addressedElsewhere}; counted as {@code
 * postbox.consumer.replays.skipped}). A <b>broadcast</b> replay carries no target: every consumer
 * of the topic receives it again.
 *
 * <p>The target is trusted like every other envelope field: whoever can write to the outbox or the
 * topic can address a message to one consumer. Stateless.
 */
public final class ReplayHeaders {

  /** The id of the dead letter a replayed copy was written from. */
  public static final String DEAD_LETTER = "postbox-replay-of";

  /** Who replayed it (the operator recorded in the audit). */
  public static final String REPLAYED_BY = "postbox-replayed-by";

  /** The consumer (subscription name) a targeted replay is for; absent on a broadcast replay. */
  public static final String TARGET = "postbox-replay-target";

  private ReplayHeaders() {}

  /** The consumer {@code message} is a targeted replay for, if it is one. */
  public static Optional<String> target(Message message) {
    return message.header(TARGET);
  }

  /**
   * Whether {@code message} is a replay targeted at another consumer than {@code consumer}: such a
   * copy is finished without applying it.
   */
  public static boolean addressedElsewhere(Message message, String consumer) {
    Objects.requireNonNull(consumer, "consumer");
    return target(message).filter(t -> !t.equals(consumer)).isPresent();
  }
}
