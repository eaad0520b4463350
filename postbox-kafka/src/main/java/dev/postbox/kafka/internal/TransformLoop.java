package dev.postbox.kafka.internal;

import dev.postbox.core.Backoff;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The poll thread of a consume-transform-produce subscription: polls a batch, runs it as one Kafka
 * transaction ({@link TransactionalBatch}), and on failure aborts it (or, for an
 * application-recoverable or fatal error, closes the producer and makes a new one with the same
 * {@code transactional.id}, which fences the old one), rewinds the batch's partitions to its first
 * offsets and polls them again after a backoff. No transaction is open across a poll, so a
 * rebalance never meets one. Counters are read from any thread.
 */
public final class TransformLoop implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(TransformLoop.class);
  private static final Duration POLL_TIMEOUT = Duration.ofMillis(100);

  /** Transactions committed, records they committed, transactions aborted, producers made. */
  public final AtomicLong transactions = new AtomicLong();

  public final AtomicLong records = new AtomicLong();
  public final AtomicLong aborted = new AtomicLong();
  public final AtomicLong recreated = new AtomicLong();

  private final String group;
  private final Collection<String> topics;
  private final Consumer<byte[], byte[]> consumer;
  private final Supplier<Producer<byte[], byte[]>> producers;
  private final TransactionalBatch batch;
  private final Backoff backoff;
  private final Sleeper sleeper;
  private final BooleanSupplier running;
  private final CountDownLatch ended = new CountDownLatch(1);
  private volatile Throwable failure;

  /**
   * A loop of {@code group} over {@code topics}; {@code producers} makes a transactional producer
   * with its transactions initialised.
   */
  public TransformLoop(
      String group,
      Collection<String> topics,
      Consumer<byte[], byte[]> consumer,
      Supplier<Producer<byte[], byte[]>> producers,
      TransactionalBatch batch,
      Backoff backoff,
      Sleeper sleeper,
      BooleanSupplier running) {
    this.group = group;
    this.topics = List.copyOf(topics);
    this.consumer = consumer;
    this.producers = producers;
    this.batch = batch;
    this.backoff = backoff;
    this.sleeper = sleeper;
    this.running = running;
  }

  /** Why the loop died, if it did. */
  public Throwable failure() {
    return failure;
  }

  /** Waits until {@link #run()} ended. */
  public void awaitEnd() throws InterruptedException {
    ended.await();
  }

  @Override
  public void run() {
    Producer<byte[], byte[]> producer = null;
    try {
      consumer.subscribe(topics);
      int failures = 0;
      while (running.getAsBoolean()) {
        if (producer == null) {
          try {
            producer = producers.get();
            recreated.incrementAndGet();
          } catch (RuntimeException e) {
            log.warn(
                "{}: cannot make a transactional producer ({}); retrying", group, e.toString());
            sleeper.sleep(backoff.delay(++failures, ThreadLocalRandom.current()));
            continue;
          }
        }
        ConsumerRecords<byte[], byte[]> polled = consumer.poll(POLL_TIMEOUT);
        if (polled.isEmpty()) {
          continue;
        }
        try {
          batch.run(producer, polled, consumer.groupMetadata());
          transactions.incrementAndGet();
          records.addAndGet(polled.count());
          failures = 0;
        } catch (WakeupException e) {
          throw e;
        } catch (Exception e) {
          producer = recover(producer, e, polled);
          sleeper.sleep(backoff.delay(++failures, ThreadLocalRandom.current()));
        }
      }
    } catch (WakeupException | InterruptedException e) {
      // closing
    } catch (RuntimeException | Error e) {
      failure = e;
      log.error("{}: transform loop failed; nothing more is consumed", group, e);
    } finally {
      if (producer != null) {
        producer.close(Duration.ofSeconds(5));
      }
      consumer.close(Duration.ofSeconds(10));
      ended.countDown();
    }
  }

  /** Aborts or replaces {@code producer} as {@code error} requires, and rewinds the batch. */
  private Producer<byte[], byte[]> recover(
      Producer<byte[], byte[]> producer, Exception error, ConsumerRecords<byte[], byte[]> polled) {
    TransactionErrors.Action action = TransactionErrors.action(error);
    if (action == TransactionErrors.Action.ABORT) {
      try {
        producer.abortTransaction();
      } catch (RuntimeException e) {
        action = TransactionErrors.Action.RECREATE;
      }
    }
    aborted.incrementAndGet();
    log.warn(
        "{}: transaction of {} records failed ({}); {} and retrying the batch",
        group,
        polled.count(),
        error.toString(),
        action == TransactionErrors.Action.ABORT ? "aborted" : "producer recreated");
    rewind(polled);
    if (action == TransactionErrors.Action.RECREATE) {
      // the next one (same transactional.id) fences this one and aborts its open transaction
      producer.close(Duration.ZERO);
      return null;
    }
    return producer;
  }

  private void rewind(ConsumerRecords<byte[], byte[]> polled) {
    Set<TopicPartition> owned = consumer.assignment();
    Map<TopicPartition, OffsetAndMetadata> next = TransactionalBatch.nextOffsets(polled);
    for (TopicPartition tp : next.keySet()) {
      if (owned.contains(tp)) { // a partition lost meanwhile is read again by its new owner
        consumer.seek(tp, polled.records(tp).get(0).offset());
      }
    }
  }
}
