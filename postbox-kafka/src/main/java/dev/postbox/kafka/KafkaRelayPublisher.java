package dev.postbox.kafka;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.kafka.internal.ClientSettings;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox rows to Kafka for the relay: idempotent producer, {@code acks=all}, messages
 * mapped by {@link KafkaRecords} (CloudEvents binary mode, Kafka key = ordering key).
 *
 * <p><b>Order under failure.</b> Kafka's idempotent producer appends the records of one partition
 * in send order and never appends a record after a gap. At the first failed record this publisher
 * discards its producer at once (from the failure callback, before the producer could bump its
 * epoch and send later records past the gap) and builds a new one for the next batch; the relay
 * then publishes the failed record and everything after it again. So no record of a key is ever
 * appended ahead of an earlier record of that key that was not appended.
 *
 * <p>Defaults: {@code acks=all}, {@code enable.idempotence=true}, {@code
 * max.in.flight.requests.per.connection=5}, {@code linger.ms=5}, {@code batch.size=131072}, {@code
 * compression.type=lz4}, {@code delivery.timeout.ms=120000}. Settings that would break the
 * guarantee ({@code acks}, idempotence) cannot be overridden. Used by one relay thread at a time;
 * {@link #close()} may be called from any thread.
 */
public final class KafkaRelayPublisher implements RelayPublisher {

  private static final Logger log = LoggerFactory.getLogger(KafkaRelayPublisher.class);

  private final Map<String, Object> config;
  private final Object lock = new Object();
  private Producer<byte[], byte[]> producer;
  private volatile boolean closed;

  private KafkaRelayPublisher(Map<String, Object> config) {
    this.config = Map.copyOf(config);
  }

  /** A builder for a publisher to the cluster at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers) {
    return new Builder(bootstrapServers);
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    return send(messages).outcomes();
  }

  /**
   * Hands the records to the producer and returns; {@link PendingPublish#outcomes()} flushes what
   * still lingers and waits for the acknowledgements (at most the delivery timeout plus 30 s).
   */
  @Override
  public PendingPublish send(List<Message> messages) {
    int n = messages.size();
    PublishOutcome[] outcomes = new PublishOutcome[n];
    if (n == 0) {
      return List::of;
    }
    Producer<byte[], byte[]> p = producer();
    CountDownLatch done = new CountDownLatch(n);
    boolean stop = false;
    for (int i = 0; i < n; i++) {
      if (i == n / 2) {
        CrashPoints.hit("relay.mid-batch");
      }
      if (stop) {
        outcomes[i] = new PublishOutcome.Failed(new IllegalStateException("not sent"), false);
        done.countDown();
        continue;
      }
      ProducerRecord<byte[], byte[]> record = KafkaRecords.toRecord(messages.get(i));
      int index = i;
      try {
        p.send(
            record,
            (metadata, error) -> {
              if (error == null) {
                outcomes[index] =
                    new PublishOutcome.Acknowledged(metadata.partition(), metadata.offset());
              } else {
                outcomes[index] = new PublishOutcome.Failed(error, permanent(error));
                discard(p, error);
              }
              done.countDown();
            });
      } catch (RuntimeException e) {
        // Raised before the record entered the producer (too large, metadata wait timed out,
        // closed).
        boolean permanent = permanent(e);
        outcomes[i] = new PublishOutcome.Failed(e, permanent);
        done.countDown();
        if (!permanent) {
          stop = true; // keep later records behind this one
          discard(p, e);
        }
      }
    }
    return () -> {
      try {
        p.flush(); // send what lingers now that the relay waits for it
      } catch (RuntimeException e) {
        log.debug("flush after a discarded producer: {}", e.toString());
      }
      long deliveryMs =
          Long.parseLong(config.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG).toString());
      if (!done.await(deliveryMs + 30_000, TimeUnit.MILLISECONDS)) {
        discard(p, new IllegalStateException("no outcome within the delivery timeout"));
      }
      PublishOutcome[] out = new PublishOutcome[n];
      for (int i = 0; i < n; i++) {
        // null only if the producer never reported: treat as not acknowledged
        out[i] =
            outcomes[i] != null
                ? outcomes[i]
                : new PublishOutcome.Failed(new IllegalStateException("no outcome"), false);
      }
      return Arrays.asList(out);
    };
  }

  @Override
  public void close() {
    closed = true;
    synchronized (lock) {
      if (producer != null) {
        producer.close(Duration.ofSeconds(10));
        producer = null;
      }
    }
  }

  private Producer<byte[], byte[]> producer() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("publisher is closed");
      }
      if (producer == null) {
        producer =
            new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
      }
      return producer;
    }
  }

  /** Drops a producer after a failure; safe from the producer's own callback thread. */
  private void discard(Producer<byte[], byte[]> p, Throwable cause) {
    synchronized (lock) {
      if (producer != p) {
        return; // already discarded
      }
      producer = null;
    }
    log.warn(
        "publish failed; discarding the producer so nothing is appended past the gap: {}",
        cause.toString());
    // From the I/O thread Kafka turns this into an immediate forced close; unsent batches fail.
    p.close(Duration.ZERO);
  }

  private static boolean permanent(Throwable e) {
    return e instanceof RecordTooLargeException
        || e instanceof RecordBatchTooLargeException
        || e instanceof InvalidTopicException
        || e instanceof SerializationException;
  }

  /** Builds a {@link KafkaRelayPublisher}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final ClientSettings config;

    private Builder(String bootstrapServers) {
      config = new ClientSettings(bootstrapServers);
      config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
      config.put(ProducerConfig.BATCH_SIZE_CONFIG, 131_072);
      config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
      config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
      config.put(ProducerConfig.CLIENT_ID_CONFIG, "postbox-relay");
    }

    /** Sets a producer property (for example {@code delivery.timeout.ms}, security settings). */
    public Builder producerProperty(String name, Object value) {
      config.put(name, value);
      return this;
    }

    /**
     * Sets how long a record may wait for acknowledgement before it counts as failed (default 120
     * s).
     */
    public Builder deliveryTimeout(Duration timeout) {
      config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
      config.put(
          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
          (int) Math.min(30_000, Math.max(1_000, timeout.toMillis() / 2)));
      return this;
    }

    /** Validates and builds the publisher; the producer is created lazily on the first publish. */
    public KafkaRelayPublisher build() {
      Object inflight = config.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION);
      if (inflight != null && Integer.parseInt(inflight.toString()) > 5) {
        throw new IllegalArgumentException(
            "max.in.flight.requests.per.connection must be <= 5 to keep order, was " + inflight);
      }
      return new KafkaRelayPublisher(
          config.build(
              List.of(
                  ProducerConfig.ACKS_CONFIG,
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  ProducerConfig.TRANSACTIONAL_ID_CONFIG),
              Map.of(
                  ProducerConfig.ACKS_CONFIG,
                  "all",
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  true),
              "the relay needs acks=all and idempotence"));
    }
  }
}
