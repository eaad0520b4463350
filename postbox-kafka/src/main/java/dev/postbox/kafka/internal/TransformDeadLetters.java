package dev.postbox.kafka.internal;

import dev.postbox.core.DeadLetters;
import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The consume-transform-produce path's dead letters: an input whose transform failed permanently,
 * that is not a Postbox message, or whose transform failed {@code maxAttempts} times is kept,
 * byte-identical, in the {@link DeadLetterStore} while its batch's transaction is open; the batch
 * then commits without outputs for it, with its offset. The store is not in the Kafka transaction:
 * a batch that dead-lettered an input and then failed to commit is read again, so before adding a
 * letter this class looks for one of the same subscription, topic, partition and offset and adds
 * none if it exists (one dead letter per input, not one per try).
 *
 * <p>Also counts each input's failed attempts across the retries of its batch (a transient failure
 * fails the whole batch, which is aborted and read again), in this instance's memory: a restarted
 * instance, or the partition's next owner, counts from zero. Thread-safe.
 */
public final class TransformDeadLetters {

  /** One input's position. */
  public record Position(String topic, int partition, long offset) {
    static Position of(ConsumerRecord<?, ?> r) {
      return new Position(r.topic(), r.partition(), r.offset());
    }

    TopicPartition partitionOf() {
      return new TopicPartition(topic, partition);
    }
  }

  /** Failed attempts of an input and when the first failed. */
  private record Attempts(int count, Instant first) {}

  private final String group;
  private final DeadLetterStore store;
  private final int maxAttempts;
  private final Clock clock;
  private final Map<Position, Attempts> attempts = new ConcurrentHashMap<>();

  /** Dead letters of subscription {@code group} in {@code store}, after {@code maxAttempts}. */
  public TransformDeadLetters(String group, DeadLetterStore store, int maxAttempts, Clock clock) {
    this.group = group;
    this.store = store;
    this.maxAttempts = maxAttempts;
    this.clock = clock;
  }

  /**
   * Counts a failed attempt of the input {@code r}; returns whether it has used up its attempts
   * (then it is dead-lettered instead of failing its batch again).
   */
  public boolean failedAndExhausted(ConsumerRecord<?, ?> r) {
    Attempts a =
        attempts.merge(
            Position.of(r),
            new Attempts(1, clock.instant()),
            (old, one) -> new Attempts(old.count() + 1, old.first()));
    return a.count() >= maxAttempts;
  }

  /**
   * Forgets the attempts of the inputs of a committed batch on {@code partition} below {@code
   * next}.
   */
  public void committed(TopicPartition partition, long next) {
    attempts.keySet().removeIf(p -> p.partitionOf().equals(partition) && p.offset() < next);
  }

  /**
   * Stores the dead letter of {@code r} ({@code message} null when it could not be decoded), unless
   * one of this input is stored already; throws if the store fails (the batch is then retried).
   */
  public void add(
      ConsumerRecord<byte[], byte[]> r,
      Message message,
      Throwable error,
      Classification classification) {
    Position p = Position.of(r);
    Optional<String> key =
        r.key() == null
            ? Optional.empty()
            : Optional.of(new String(r.key(), StandardCharsets.UTF_8));
    boolean stored =
        store
            .query(
                new DeadLetterStore.Query(
                    Optional.of(group),
                    Optional.of(r.topic()),
                    key,
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    10_000))
            .stream()
            .anyMatch(
                d -> d.letter().partition() == p.partition() && d.letter().offset() == p.offset());
    if (stored) {
      return;
    }
    Attempts a = attempts.get(p);
    Instant now = clock.instant();
    store.add(
        new NewDeadLetter(
            group,
            r.topic(),
            r.partition(),
            r.offset(),
            message == null ? Optional.empty() : Optional.of(message.id()),
            message == null ? Optional.empty() : Optional.of(message.type()),
            r.key(),
            r.value(),
            IncomingRecords.of(r).headers(),
            classification,
            error.getClass().getName(),
            String.valueOf(error.getMessage()),
            DeadLetters.stackTrace(error),
            DeadLetters.fingerprint(r.topic(), error),
            a == null ? 1 : a.count(),
            a == null ? now : a.first(),
            now));
  }
}
