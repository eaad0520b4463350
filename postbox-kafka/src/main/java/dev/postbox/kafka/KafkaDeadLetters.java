package dev.postbox.kafka;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.kafka.internal.StoredRecords;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Turns a dead letter back into the {@link Message} it carried, from its byte-identical key, value
 * and headers (the same {@link KafkaRecords} mapping the consumer used). Used by replay: the
 * message is written to the outbox again with its original id, so the consumer's inbox deduplicates
 * it. Thread-safe (stateless).
 */
public final class KafkaDeadLetters {

  private KafkaDeadLetters() {}

  /**
   * The decoder for {@code Replayer}: dead letter → original message (throws for an undecodable
   * record).
   */
  public static Function<DeadLetter, Message> decoder() {
    return KafkaDeadLetters::message;
  }

  /** The original message of {@code letter}. */
  public static Message message(DeadLetter letter) {
    DeadLetterStore.NewDeadLetter l = letter.letter();
    ConsumerRecord<byte[], byte[]> r =
        StoredRecords.rebuild(
            l.topic(),
            l.partition(),
            l.offset(),
            ConsumerRecord.NO_TIMESTAMP,
            l.key(),
            l.value(),
            l.headers());
    return KafkaRecords.fromRecord(r);
  }
}
