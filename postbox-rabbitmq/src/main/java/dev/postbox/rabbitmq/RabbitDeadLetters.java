package dev.postbox.rabbitmq;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import java.util.Objects;
import java.util.function.Function;

/**
 * Turns a dead letter the RabbitMQ subscriber wrote back into the {@link Message} it carried: its
 * AMQP properties rebuilt from the stored headers ({@link RabbitMessages#deadLetterHeaders}: the
 * content type and each header as bytes) and read by the same {@link RabbitMessages#fromDelivery}
 * the subscriber used. Used by replay and edit (the message goes to the outbox again with its
 * original id, so the consumer's inbox deduplicates it). Thread-safe (stateless).
 */
public final class RabbitDeadLetters {

  private RabbitDeadLetters() {}

  /** The decoder for {@code Replayer} and {@code PostboxAdmin}: RabbitMQ dead letters only. */
  public static Function<DeadLetter, Message> decoder() {
    return RabbitDeadLetters::message;
  }

  /**
   * A decoder for a store that holds the dead letters of both transports: a letter with RabbitMQ's
   * CloudEvents headers ({@code cloudEvents_*}) is read here, any other by {@code others} (for
   * example {@code KafkaDeadLetters.decoder()}).
   */
  public static Function<DeadLetter, Message> decoderOr(Function<DeadLetter, Message> others) {
    Objects.requireNonNull(others, "others");
    return letter -> isRabbit(letter) ? message(letter) : others.apply(letter);
  }

  /**
   * Whether {@code letter} was written from a RabbitMQ delivery (it has AMQP CloudEvents headers).
   */
  public static boolean isRabbit(DeadLetter letter) {
    for (DeadLetterStore.Header h : letter.letter().headers()) {
      if (h.name().startsWith(RabbitMessages.PREFIX)
          || h.name().startsWith(RabbitMessages.OLD_PREFIX)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The original message of {@code letter}.
   *
   * @throws dev.postbox.core.DecodingException if the stored delivery does not map to a message
   */
  public static Message message(DeadLetter letter) {
    DeadLetterStore.NewDeadLetter l = letter.letter();
    return RabbitMessages.fromDelivery(
        l.topic(), null, RabbitMessages.storedProperties(l.headers()), l.value());
  }
}
