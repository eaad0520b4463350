package dev.postbox.kafka.internal;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.ReplayHeaders;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.Transform;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One poll batch as one Kafka transaction: begins it, runs every record through the transform on
 * its key's (or partition's) lane, waits for all of them and for every output's acknowledgement
 * within the batch timeout, adds the batch's next offsets with the consumer's group metadata (so a
 * member of an older generation is refused), and commits. Any failure propagates and the caller
 * aborts or recreates the producer ({@link TransactionErrors}). With dead letters ({@link
 * TransformDeadLetters}), an input that is not a Postbox message, whose transform throws a {@link
 * PermanentMessageException}, or whose transform failed its last allowed attempt is dead-lettered
 * and emits nothing (its offset commits with the batch); without, an input that is not a Postbox
 * message is logged and passed over, and a failing transform fails its batch.
 */
public final class TransactionalBatch {

  private static final Logger log = LoggerFactory.getLogger(TransactionalBatch.class);

  private final String group;
  private final Transform transform;
  private final Ordering ordering;
  private final KeyedExecutor executor;
  private final Duration timeout;
  private final Ticker ticker;
  private final Optional<TransformDeadLetters> deadLetters;

  /**
   * Batches of {@code group} run by {@code transform} on {@code executor}, within {@code timeout}
   * on {@code ticker}; inputs given up go to {@code deadLetters} (none: a failing input holds its
   * batch, an undecodable one is passed over).
   */
  public TransactionalBatch(
      String group,
      Transform transform,
      Ordering ordering,
      KeyedExecutor executor,
      Duration timeout,
      Ticker ticker,
      Optional<TransformDeadLetters> deadLetters) {
    this.group = group;
    this.transform = transform;
    this.ordering = ordering;
    this.executor = executor;
    this.timeout = timeout;
    this.ticker = ticker;
    this.deadLetters = deadLetters;
  }

  /** The offsets after each partition's last record of {@code records}. */
  public static Map<TopicPartition, OffsetAndMetadata> nextOffsets(
      ConsumerRecords<byte[], byte[]> records) {
    Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
    for (TopicPartition tp : records.partitions()) {
      List<ConsumerRecord<byte[], byte[]>> rs = records.records(tp);
      out.put(tp, new OffsetAndMetadata(rs.get(rs.size() - 1).offset() + 1));
    }
    return out;
  }

  /**
   * Runs {@code records} in one transaction of {@code producer}, committed with their offsets.
   *
   * @throws Exception the first failure (a transform's, a send's, a transaction call's, or a {@link
   *     TimeoutException} past the batch timeout); the transaction is then still open
   */
  public void run(
      Producer<byte[], byte[]> producer,
      ConsumerRecords<byte[], byte[]> records,
      ConsumerGroupMetadata groupMetadata)
      throws Exception {
    long deadline = ticker.deadlineIn(timeout);
    Gate gate = new Gate();
    producer.beginTransaction();
    try {
      List<CompletableFuture<List<Future<RecordMetadata>>>> applied = new ArrayList<>();
      for (ConsumerRecord<byte[], byte[]> r : records) {
        CompletableFuture<List<Future<RecordMetadata>>> done = new CompletableFuture<>();
        applied.add(done);
        executor.submit(
            lane(r),
            () -> {
              try {
                done.complete(apply(producer, gate, r));
              } catch (Throwable e) {
                done.completeExceptionally(e);
              }
            });
      }
      for (CompletableFuture<List<Future<RecordMetadata>>> done : applied) {
        for (Future<RecordMetadata> sent : await(done, deadline)) {
          await(sent, deadline);
        }
      }
    } finally {
      // a task of a failed batch that is still running must not send into the next transaction
      gate.close();
    }
    Map<TopicPartition, OffsetAndMetadata> next = nextOffsets(records);
    producer.sendOffsetsToTransaction(next, groupMetadata);
    CrashPoints.hit(CrashPoints.TRANSFORM_BEFORE_COMMIT);
    producer.commitTransaction();
    deadLetters.ifPresent(d -> next.forEach((tp, o) -> d.committed(tp, o.offset())));
  }

  /**
   * Lets a batch's tasks send while the batch is open: once it is closed (done or failed), a late
   * send throws instead of joining whatever transaction the producer has next.
   */
  private static final class Gate {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private boolean open = true;

    Future<RecordMetadata> send(
        Producer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record) {
      lock.readLock().lock();
      try {
        if (!open) {
          throw new IllegalStateException("the batch's transaction is over; output dropped");
        }
        return producer.send(record);
      } finally {
        lock.readLock().unlock();
      }
    }

    void close() {
      lock.writeLock().lock();
      try {
        open = false;
      } finally {
        lock.writeLock().unlock();
      }
    }
  }

  private List<Future<RecordMetadata>> apply(
      Producer<byte[], byte[]> producer, Gate gate, ConsumerRecord<byte[], byte[]> r)
      throws Exception {
    Message input;
    try {
      input = KafkaRecords.fromRecord(r);
    } catch (DecodingException e) {
      if (deadLetters.isPresent()) {
        deadLetters.get().add(r, null, e, Classification.PERMANENT);
      }
      log.warn(
          "{}: {} is not a Postbox message; {}: {}",
          group,
          IncomingRecords.position(r),
          deadLetters.isPresent() ? "dead-lettered" : "passed over",
          e.getMessage());
      return List.of();
    }
    if (ReplayHeaders.addressedElsewhere(input, group)) {
      log.info(
          "{}: passing over message {} at {}: a replayed dead letter for another consumer",
          group,
          input.id(),
          IncomingRecords.position(r));
      return List.of();
    }
    // outputs are sent once the transform returned: an input given up leaves no output behind
    List<ProducerRecord<byte[], byte[]>> outputs = new ArrayList<>();
    try {
      transform.apply(input, out -> outputs.add(KafkaRecords.toRecord(out)));
    } catch (Exception e) {
      if (deadLetters.isEmpty()) {
        throw e;
      }
      Classification given;
      if (e instanceof PermanentMessageException) {
        given = Classification.PERMANENT;
      } else if (deadLetters.get().failedAndExhausted(r)) {
        given = Classification.RETRIES_EXHAUSTED;
      } else {
        throw e; // the batch is aborted and tried again
      }
      deadLetters.get().add(r, input, e, given);
      log.error(
          "{}: giving up on message {} ({}) at {} ({}); dead-lettered, no output: {}",
          group,
          input.id(),
          input.type(),
          IncomingRecords.position(r),
          given,
          e.toString());
      return List.of();
    }
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    for (ProducerRecord<byte[], byte[]> out : outputs) {
      sent.add(gate.send(producer, out));
    }
    return sent;
  }

  private Object lane(ConsumerRecord<byte[], byte[]> r) {
    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
    return switch (ordering) {
      case UNORDERED -> null;
      case PARTITION -> tp;
      case KEY -> r.key() == null ? tp : List.of(tp, ByteBuffer.wrap(r.key()));
    };
  }

  private <T> T await(Future<T> f, long deadline) throws Exception {
    long left = deadline - ticker.nanos();
    try {
      return f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }
}
