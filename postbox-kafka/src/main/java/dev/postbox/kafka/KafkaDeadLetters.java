package dev.postbox.kafka;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

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
    RecordHeaders headers = new RecordHeaders();
    for (DeadLetterStore.Header h : l.headers()) {
      headers.add(h.name(), h.value());
    }
    ConsumerRecord<byte[], byte[]> r =
        new ConsumerRecord<>(
            l.topic(),
            l.partition(),
            l.offset(),
            ConsumerRecord.NO_TIMESTAMP,
            TimestampType.NO_TIMESTAMP_TYPE,
            l.key() == null ? ConsumerRecord.NULL_SIZE : l.key().length,
            l.value() == null ? ConsumerRecord.NULL_SIZE : l.value().length,
            l.key(),
            l.value(),
            headers,
            Optional.empty());
    return KafkaRecords.fromRecord(r);
  }
}
