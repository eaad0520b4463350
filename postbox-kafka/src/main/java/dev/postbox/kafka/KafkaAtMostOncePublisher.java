package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.kafka.internal.ClientSettings;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * {@link DeliveryGuarantee#AT_MOST_ONCE} publishing: straight to Kafka, no outbox, {@code acks=0},
 * no retries. A message may be lost (broker down, process crash, full buffer); none is ever sent
 * twice. For loss-tolerant streams such as metrics, presence or cache hints, where the outbox's
 * cost buys nothing.
 *
 * <p>{@link #send(Message)} never blocks on the network: when the producer's buffer is full or the
 * broker is unknown it drops the message (counted in {@link #dropped()}) instead of waiting.
 * Defaults: {@code acks=0}, {@code retries=0}, {@code enable.idempotence=false}, {@code
 * linger.ms=5}, {@code max.block.ms=0}. Thread-safe.
 */
public final class KafkaAtMostOncePublisher implements AutoCloseable {

  private final Producer<byte[], byte[]> producer;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();

  private KafkaAtMostOncePublisher(Map<String, Object> config) {
    this.producer =
        new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** A builder for a publisher to the cluster at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers) {
    return new Builder(bootstrapServers);
  }

  /** Sends {@code message} once, fire and forget. */
  public void send(Message message) {
    Objects.requireNonNull(message, "message");
    try {
      producer.send(
          KafkaRecords.toRecord(message),
          (md, error) -> {
            if (error != null) {
              dropped.incrementAndGet();
            }
          });
      sent.incrementAndGet();
    } catch (RuntimeException e) {
      dropped.incrementAndGet();
    }
  }

  /** Messages handed to the producer. */
  public long sent() {
    return sent.get();
  }

  /** Messages dropped (buffer full, no metadata, send error). */
  public long dropped() {
    return dropped.get();
  }

  /** Sends what is buffered (bounded wait) and closes. */
  @Override
  public void close() {
    producer.close(Duration.ofSeconds(5));
  }

  /** Builds a {@link KafkaAtMostOncePublisher}. Not thread-safe. */
  public static final class Builder {
    private final ClientSettings config;

    private Builder(String bootstrapServers) {
      config = new ClientSettings(bootstrapServers);
      config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
      config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 1000);
      config.put(ProducerConfig.CLIENT_ID_CONFIG, "postbox-at-most-once");
    }

    /** Sets a producer property; {@code acks}, {@code retries} and idempotence are fixed. */
    public Builder producerProperty(String name, Object value) {
      config.put(name, value);
      return this;
    }

    /** Validates and builds the publisher (creates its producer). */
    public KafkaAtMostOncePublisher build() {
      return new KafkaAtMostOncePublisher(
          config.build(
              List.of(
                  ProducerConfig.ACKS_CONFIG,
                  ProducerConfig.RETRIES_CONFIG,
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  ProducerConfig.TRANSACTIONAL_ID_CONFIG),
              Map.of(
                  ProducerConfig.ACKS_CONFIG,
                  "0",
                  ProducerConfig.RETRIES_CONFIG,
                  0,
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  false),
              "at-most-once publishing: acks=0, no retries"));
    }
  }
}
