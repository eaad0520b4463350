package dev.postbox.kafka;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.engine.reply.RequestTransport;
import dev.postbox.core.engine.reply.RequesterEngine;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.reply.RequesterBuilder;
import dev.postbox.core.reply.RequesterStats;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ClientSettings;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Requester} on Kafka: requests go straight to their topic (no outbox: the caller waits
 * for the reply anyway and retries with the same id after a timeout), with {@code reply-to} =
 * {@code replyTopic:replyPartition}; replies are read from that one partition, assigned to this
 * instance (no consumer group, so no rebalance ever moves it away), from its end at start.
 *
 * <p><b>Routing replies to the instance that asked.</b> Give each requester instance its own
 * partition of the reply topic ({@link Builder#replyPartition}, for example the instance's index);
 * the responder produces each reply to the partition named in its request. Two instances sharing a
 * partition still never get each other's replies (correlation ids are the requests' unique ids):
 * each counts the other's as unknown and drops them, at the cost of reading them.
 *
 * <p>Defaults (the settings every requester shares are {@link RequesterBuilder}'s): at most {@value
 * RequesterBuilder#DEFAULT_MAX_IN_FLIGHT} requests in flight, timeouts checked every 10 ms, {@value
 * RequesterBuilder#DEFAULT_REMEMBERED_REQUESTS} finished requests remembered to tell late and
 * duplicate replies from unknown ones, late replies ignored (counted); the producer has {@code
 * acks=all}, idempotence and {@code linger.ms=0} (a request is sent at once). The reply topic must
 * exist. Thread-safe.
 */
public final class KafkaRequester implements Requester {

  /** Default partition of the reply topic this instance reads. */
  public static final int DEFAULT_REPLY_PARTITION = 0;

  /** Default name, in thread names and logs. */
  public static final String DEFAULT_NAME = "requester";

  private static final Logger log = LoggerFactory.getLogger(KafkaRequester.class);

  private final String name;
  private final KafkaReplyAddress address;
  private final KafkaProducer<byte[], byte[]> producer;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final RequesterEngine engine;
  private volatile boolean running;
  private Thread replyThread;

  private KafkaRequester(Builder b) {
    this.name = b.name;
    this.address = new KafkaReplyAddress(b.replyTopic, b.replyPartition);
    this.producer =
        new KafkaProducer<>(
            b.producer.build(List.of(), Map.of(), ""),
            new ByteArraySerializer(),
            new ByteArraySerializer());
    this.consumer =
        new KafkaConsumer<>(
            b.consumer.build(List.of(), Map.of(), ""),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
    this.engine =
        b.newEngine(
            name,
            new RequestTransport() {
              @Override
              public String replyAddress() {
                return address.toString();
              }

              @Override
              public CompletableFuture<Void> send(Message request) {
                CompletableFuture<Void> acked = new CompletableFuture<>();
                producer.send(
                    KafkaRecords.toRecord(request),
                    (md, error) -> {
                      if (error != null) {
                        acked.completeExceptionally(error);
                      } else {
                        acked.complete(null);
                      }
                    });
                return acked;
              }
            });
  }

  /**
   * Durable requests answered on partition 0 of {@code replyTopic}: written through the outbox in
   * the caller's transaction, their replies read by an {@code EFFECTIVELY_ONCE} subscription on
   * {@code replyTopic} with {@link DurableRequests#replyHandler} (see {@link DurableRequests}).
   */
  public static DurableRequests durableRequests(String replyTopic) {
    return durableRequests(replyTopic, 0);
  }

  /** Durable requests answered on {@code partition} of {@code replyTopic}. */
  public static DurableRequests durableRequests(String replyTopic, int partition) {
    return DurableRequests.replyingTo(new KafkaReplyAddress(replyTopic, partition).toString());
  }

  /** A builder for a requester reading its replies from {@code replyTopic}. */
  public static Builder builder(String bootstrapServers, String replyTopic) {
    return new Builder(bootstrapServers, replyTopic);
  }

  /**
   * Takes its reply partition (from its end: replies sent before are not this incarnation's) and
   * starts reading replies and checking timeouts. Returns once the partition's position is known,
   * so a reply to any request sent afterwards is read.
   */
  public synchronized KafkaRequester start() {
    if (replyThread != null) {
      throw new IllegalStateException("already started");
    }
    TopicPartition tp = new TopicPartition(address.topic(), address.partition());
    consumer.assign(List.of(tp));
    consumer.seekToEnd(List.of(tp));
    consumer.position(tp); // resolves the end now, before any request is sent
    running = true;
    engine.start();
    replyThread = Thread.ofPlatform().name("postbox-replies-" + name).start(this::readReplies);
    return this;
  }

  private void readReplies() {
    try {
      while (running) {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
          Message reply;
          try {
            reply = KafkaRecords.fromRecord(record);
          } catch (DecodingException e) {
            engine.pending().unusableReply();
            log.warn(
                "{}: dropped an unreadable reply at {}: {}", name, record.offset(), e.getMessage());
            continue;
          }
          engine.replyReceived(reply);
        }
      }
    } catch (WakeupException e) {
      // closing
    } catch (RuntimeException e) {
      log.error("{}: reading replies failed; requests in flight will time out", name, e);
    } finally {
      consumer.close(Duration.ofSeconds(5));
    }
  }

  /** The address requests name in their {@code reply-to} header. */
  public KafkaReplyAddress replyAddress() {
    return address;
  }

  @Override
  public CompletableFuture<Reply> request(Message request, Duration timeout) {
    return engine.request(request, timeout);
  }

  @Override
  public RequesterStats stats() {
    return engine.stats();
  }

  /** Fails the requests in flight, stops reading replies and closes the clients. Idempotent. */
  @Override
  public void close() {
    Thread t;
    synchronized (this) {
      if (!running) {
        return;
      }
      running = false;
      t = replyThread;
    }
    engine.close();
    consumer.wakeup();
    try {
      t.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    producer.close(Duration.ofSeconds(5));
  }

  /** Builds a {@link KafkaRequester}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder extends RequesterBuilder<Builder> {
    private final String replyTopic;
    private final ClientSettings producer;
    private final ClientSettings consumer;
    private String name = DEFAULT_NAME;
    private int replyPartition = DEFAULT_REPLY_PARTITION;

    private Builder(String bootstrapServers, String replyTopic) {
      Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.replyTopic = Objects.requireNonNull(replyTopic, "replyTopic");
      producer = new ClientSettings(bootstrapServers);
      producer.put(ProducerConfig.ACKS_CONFIG, "all");
      producer.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      producer.put(ProducerConfig.LINGER_MS_CONFIG, 0);
      consumer = new ClientSettings(bootstrapServers);
      consumer.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      consumer.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      consumer.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
    }

    /** Sets the name, in thread names and logs (default {@value #DEFAULT_NAME}). */
    public Builder name(String name) {
      this.name = Objects.requireNonNull(name, "name");
      return this;
    }

    /** Sets the partition of the reply topic this instance owns and reads (default 0). */
    public Builder replyPartition(int partition) {
      if (partition < 0) {
        throw new IllegalArgumentException("replyPartition must not be negative: " + partition);
      }
      this.replyPartition = partition;
      return this;
    }

    /** Sets a property of the request producer. */
    public Builder producerProperty(String name, Object value) {
      producer.put(name, value);
      return this;
    }

    /** Sets a property of the reply consumer ({@code group.id} is not used: none is set). */
    public Builder consumerProperty(String name, Object value) {
      consumer.put(name, value);
      return this;
    }

    /** Sets the time of the timeouts (default: the system's); for tests. Not an API. */
    Builder time(Ticker ticker, Sleeper sleeper) {
      return useTime(ticker, sleeper);
    }

    private RequesterEngine newEngine(String name, RequestTransport transport) {
      return engine(name, transport);
    }

    /** Validates and builds the requester (not yet started). */
    public KafkaRequester build() {
      new KafkaReplyAddress(replyTopic, replyPartition); // validates the topic
      return new KafkaRequester(this);
    }
  }
}
