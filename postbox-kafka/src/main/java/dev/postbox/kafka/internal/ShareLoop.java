package dev.postbox.kafka.internal;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.time.Ticker;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.ShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The poll thread of a share-group subscriber (KIP-932): polls a batch of acquired records, hands
 * each to the engine on a worker, waits for the batch, then acknowledges each record on this thread
 * (the share consumer is single-threaded) and commits the acknowledgements.
 *
 * <ul>
 *   <li>{@code AT_MOST_ONCE}: the batch is accepted and committed <em>before</em> it is handled.
 *   <li>Otherwise a finished record (applied, suppressed, ignored or dead-lettered) is {@code
 *       ACCEPT}ed, an abandoned one (the subscriber is closing) {@code RELEASE}d for another
 *       delivery, after the effect's transaction committed.
 *   <li>A record the broker delivered more than {@code maxDeliveries} times (its earlier deliveries
 *       crashed, timed out or were released) is dead-lettered without running, so a record that
 *       kills its consumer cannot loop until the broker archives it silently.
 * </ul>
 *
 * Not thread-safe: run by one thread, stopped through {@code running} and {@link
 * ShareConsumer#wakeup()}.
 */
public final class ShareLoop implements Runnable {

  /** How long one poll waits for records. */
  public static final Duration POLL_TIMEOUT = Duration.ofMillis(500);

  private static final Logger log = LoggerFactory.getLogger(ShareLoop.class);

  private final ShareConsumer<byte[], byte[]> consumer;
  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final KeyedExecutor executor;
  private final int maxDeliveries;
  private final Function<Integer, Throwable> deliveryLimitError;
  private final BooleanSupplier running;
  private final Clock clock;
  private final Ticker ticker;
  private final AtomicInteger inFlight;

  /**
   * A loop over {@code consumer} (subscribed, explicit acknowledgement) feeding {@code processor}
   * through {@code executor}; {@code deliveryLimitError} names the error kept with a record
   * delivered more than {@code maxDeliveries} times (given its delivery count).
   */
  public ShareLoop(
      ShareConsumer<byte[], byte[]> consumer,
      Subscription subscription,
      DeliveryProcessor processor,
      KeyedExecutor executor,
      int maxDeliveries,
      Function<Integer, Throwable> deliveryLimitError,
      BooleanSupplier running,
      Clock clock,
      Ticker ticker,
      AtomicInteger inFlight) {
    this.consumer = consumer;
    this.subscription = subscription;
    this.processor = processor;
    this.executor = executor;
    this.maxDeliveries = maxDeliveries;
    this.deliveryLimitError = deliveryLimitError;
    this.running = running;
    this.clock = clock;
    this.ticker = ticker;
    this.inFlight = inFlight;
  }

  @Override
  public void run() {
    try {
      while (running.getAsBoolean()) {
        ConsumerRecords<byte[], byte[]> records;
        try {
          records = consumer.poll(POLL_TIMEOUT);
        } catch (WakeupException e) {
          break;
        }
        if (!records.isEmpty()) {
          handle(records);
        }
      }
    } catch (RuntimeException e) {
      log.error("{}: share poll loop stopped: {}", subscription.name(), e.toString(), e);
    } finally {
      try {
        consumer.close(); // commits what was acknowledged, releases what is still acquired
      } catch (RuntimeException e) {
        log.warn("{}: closing the share consumer: {}", subscription.name(), e.toString());
      }
    }
  }

  private void handle(ConsumerRecords<byte[], byte[]> records) {
    boolean atMostOnce = subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE;
    if (atMostOnce) {
      for (ConsumerRecord<byte[], byte[]> r : records) {
        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
      }
      commit(); // before handling: a crash now loses the batch, never repeats it
    }
    List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
    List<CompletableFuture<Boolean>> outcomes = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      CompletableFuture<Boolean> outcome = new CompletableFuture<>();
      batch.add(r);
      outcomes.add(outcome);
      inFlight.incrementAndGet();
      executor.submit(
          null,
          () -> {
            try {
              outcome.complete(run(r, atMostOnce));
            } catch (RuntimeException e) {
              log.error(
                  "{}: unexpected failure at {}",
                  subscription.name(),
                  IncomingRecords.position(r),
                  e);
              outcome.complete(false);
            } finally {
              inFlight.decrementAndGet();
            }
          });
    }
    // counted once they are in flight, as the poll loop does: whoever sees them received sees them
    // in flight until they finish, so "received N, none in flight" means all N are done
    processor.received(records.count());
    if (atMostOnce) {
      awaitAll(outcomes);
      return;
    }
    boolean allSettled = awaitAll(outcomes);
    for (int i = 0; i < batch.size(); i++) {
      Boolean finished = outcomes.get(i).getNow(null);
      if (finished == null) {
        continue; // still running at close: consumer.close() releases it
      }
      consumer.acknowledge(
          batch.get(i), finished ? AcknowledgeType.ACCEPT : AcknowledgeType.RELEASE);
    }
    if (allSettled) {
      commit();
    }
  }

  private boolean run(ConsumerRecord<byte[], byte[]> r, boolean atMostOnce) {
    Incoming in = IncomingRecords.of(r);
    int deliveries = r.deliveryCount().map(Short::intValue).orElse(1);
    if (!running.getAsBoolean()) {
      processor.abandoned(1);
      return false;
    }
    if (!atMostOnce && deliveries > maxDeliveries) {
      processor.giveUpDelayed(
          in, deliveryLimitError.apply(deliveries), deliveries - 1, clock.instant());
      return true;
    }
    return processor.process(in, running);
  }

  /**
   * Waits for every outcome; once the subscriber is closing, at most its shutdown timeout. Returns
   * whether all are settled.
   */
  private boolean awaitAll(List<CompletableFuture<Boolean>> outcomes) {
    CompletableFuture<Void> all =
        CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new));
    long deadline = Long.MAX_VALUE;
    while (true) {
      try {
        all.get(POLL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        return true;
      } catch (TimeoutException e) {
        if (!running.getAsBoolean()) {
          if (deadline == Long.MAX_VALUE) {
            deadline = ticker.nanos() + subscription.shutdownTimeout().toNanos();
          } else if (ticker.nanos() > deadline) {
            return false;
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (ExecutionException e) {
        return true; // outcomes never complete exceptionally
      }
    }
  }

  private void commit() {
    Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
    result.forEach((tp, error) ->
        error.ifPresent(e ->
            // e.g. an acquisition lock that expired: the record goes to another consumer
            // (and the inbox absorbs a second effect)
            log.warn(
                "{}: acknowledgements of {} not committed: {}",
                subscription.name(),
                tp,
                e.toString())));
  }
}
