package dev.postbox.kafka.internal;

import dev.postbox.core.Backoff;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.random.RandomGenerator;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Produces one record and waits for the broker's ack, retrying after {@link #BACKOFF} while the
 * caller still owns the record it hands off (for example to a retry topic).
 *
 * <p>Thread-safe if the producer is (Kafka's is).
 */
public final class AckedSend {

  private static final Logger log = LoggerFactory.getLogger(AckedSend.class);

  /** 200 ms doubling up to 5 s, no jitter: 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5... s. */
  public static final Backoff BACKOFF =
      new Backoff(Duration.ofMillis(200), Duration.ofSeconds(5), 2, 0);

  /** How long one attempt waits for its ack. */
  static final Duration ACK_TIMEOUT = Duration.ofSeconds(30);

  // no jitter: the generator is never consulted for a delay's value
  private static final RandomGenerator NO_JITTER = RandomGenerator.getDefault();

  private final Producer<byte[], byte[]> producer;
  private final String name;
  private final Sleeper sleeper;

  /** Sends through {@code producer} for subscription {@code name}, waiting with {@code sleeper}. */
  public AckedSend(Producer<byte[], byte[]> producer, String name, Sleeper sleeper) {
    this.producer = producer;
    this.name = name;
    this.sleeper = sleeper;
  }

  /**
   * Sends {@code record} (from {@code origin}, for the log) until acked; returns {@code true} once
   * acked, {@code false} when a failed attempt finds {@code owned} false or the thread is
   * interrupted (its interrupt flag then stays set).
   */
  public boolean send(ProducerRecord<byte[], byte[]> record, String origin, BooleanSupplier owned) {
    for (int i = 1; ; i++) {
      try {
        producer.send(record).get(ACK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        return true;
      } catch (ExecutionException | TimeoutException | RuntimeException e) {
        log.warn(
            "{}: producing {} to {} failed (attempt {}); retrying",
            name,
            origin,
            record.topic(),
            i,
            e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
      if (!owned.getAsBoolean()) {
        return false;
      }
      try {
        sleeper.sleep(BACKOFF.delay(i, NO_JITTER));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }
}
