package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.reply.ReplySender;
import dev.postbox.core.engine.reply.ResponderHandler;
import dev.postbox.core.reply.ReplyHandler;
import dev.postbox.kafka.internal.ClientSettings;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The responder side of request/reply on Kafka: {@link #handler} makes the handler of an {@code
 * EFFECTIVELY_ONCE} {@link KafkaSubscriber} on the request topic, which runs a {@link ReplyHandler}
 * in the request's inbox transaction, stores the reply with the inbox row and, after the commit,
 * produces it to the partition of the reply topic the request names ({@code reply-to} = {@code
 * topic:partition}). A repeated request (redelivery, or the requester retrying after a timeout)
 * gets the stored reply again without the effect running twice.
 *
 * <pre>{@code
 * KafkaResponder payments = KafkaResponder.builder(bootstrap).source("/payments").build();
 * KafkaSubscriber server = KafkaSubscriber.builder(bootstrap, subscription) // EFFECTIVELY_ONCE
 *     .inbox(inbox)
 *     .deadLetters(deadLetters)
 *     .handler(payments.handler(subscription, request -> authorise(request)))
 *     .build();
 * }</pre>
 *
 * <p>A request without a reply address or correlation id is dead-lettered with that reason. A reply
 * that cannot be produced (the broker refuses it, the topic is gone) fails the attempt: it is
 * retried with the stored reply and given up per the subscription's failure handler, the reason in
 * the dead letter. Defaults: replies of type {@code <request type>.reply}, source {@value
 * Message#DEFAULT_SOURCE}; the producer has {@code acks=all}, idempotence, {@code linger.ms=0} and
 * waits at most {@code DEFAULT_SEND_TIMEOUT} for the broker's ack. Thread-safe.
 */
public final class KafkaResponder implements AutoCloseable {

  /** Default longest wait for the broker's ack of a reply. */
  public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);

  /** Default source of the replies. */
  public static final String DEFAULT_SOURCE = Message.DEFAULT_SOURCE;

  private final KafkaProducer<byte[], byte[]> producer;
  private final String replyType;
  private final String source;
  private final Duration sendTimeout;
  private final Clock clock;

  private KafkaResponder(Builder b) {
    this.producer =
        new KafkaProducer<>(
            b.producer.build(List.of(), Map.of(), ""),
            new ByteArraySerializer(),
            new ByteArraySerializer());
    this.replyType = b.replyType;
    this.source = b.source;
    this.sendTimeout = b.sendTimeout;
    this.clock = b.clock;
  }

  /** A builder for a responder producing replies to the cluster at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers) {
    return new Builder(bootstrapServers);
  }

  /**
   * The handler of {@code subscription} (which must be {@code EFFECTIVELY_ONCE}) answering its
   * requests with {@code handler}.
   */
  public MessageHandler handler(Subscription subscription, ReplyHandler handler) {
    if (subscription.guarantee() != DeliveryGuarantee.EFFECTIVELY_ONCE) {
      throw new IllegalArgumentException(
          "a responder stores each reply with the request's inbox row: subscription '"
              + subscription.name()
              + "' must be EFFECTIVELY_ONCE, not "
              + subscription.guarantee());
    }
    return new ResponderHandler(handler, sender(), replyType, source, clock);
  }

  private ReplySender sender() {
    return new ReplySender() {
      @Override
      public String topicOf(String replyTo) {
        return KafkaReplyAddress.parse(replyTo).topic();
      }

      @Override
      public void send(String replyTo, Message reply) throws Exception {
        KafkaReplyAddress to = KafkaReplyAddress.parse(replyTo);
        ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(reply);
        producer
            .send(
                new ProducerRecord<>(
                    to.topic(), to.partition(), null, r.key(), r.value(), r.headers()))
            .get(sendTimeout.toMillis(), TimeUnit.MILLISECONDS);
      }
    };
  }

  /** Closes the producer (bounded wait). */
  @Override
  public void close() {
    producer.close(Duration.ofSeconds(5));
  }

  /** Builds a {@link KafkaResponder}. Not thread-safe. */
  public static final class Builder {
    private final ClientSettings producer;
    private String replyType;
    private String source = DEFAULT_SOURCE;
    private Duration sendTimeout = DEFAULT_SEND_TIMEOUT;
    private Clock clock = Clock.systemUTC();

    private Builder(String bootstrapServers) {
      producer = new ClientSettings(bootstrapServers);
      producer.put(ProducerConfig.ACKS_CONFIG, "all");
      producer.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      producer.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    }

    /** Sets the type of the replies (default: the request's type plus {@code .reply}). */
    public Builder replyType(String type) {
      this.replyType = Objects.requireNonNull(type, "type");
      return this;
    }

    /** Sets the source of the replies (default {@value Message#DEFAULT_SOURCE}). */
    public Builder source(String source) {
      this.source = Objects.requireNonNull(source, "source");
      return this;
    }

    /** Sets the longest wait for the broker's ack of a reply (default 30 s). */
    public Builder sendTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("sendTimeout must be positive: " + timeout);
      }
      this.sendTimeout = timeout;
      return this;
    }

    /** Sets the clock of the replies' time (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Sets a property of the reply producer. */
    public Builder producerProperty(String name, Object value) {
      producer.put(name, value);
      return this;
    }

    /** Builds the responder. */
    public KafkaResponder build() {
      return new KafkaResponder(this);
    }
  }
}
