package dev.postbox.spec;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.kafka.KafkaDeadLetters;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The spec's fixture on the test kit's shared Kafka broker: one-partition topics (so key-level
 * concurrency runs inside one partition), {@link KafkaSubscriber}, {@link KafkaRelayPublisher}.
 */
final class KafkaTransport extends AbstractTransport {

  private final PostboxTestContext ctx;

  KafkaTransport(PostboxTestContext ctx) {
    super(ctx);
    this.ctx = ctx;
  }

  @Override
  public String name() {
    return "kafka";
  }

  @Override
  public String topic(String base) {
    return ctx.topic(base, 1);
  }

  @Override
  public Subscriber subscribe(Subscription subscription, MessageHandler handler) {
    KafkaSubscriber.Builder b =
        stores(
            KafkaSubscriber.builder(ctx.bootstrapServers(), subscription).handler(handler),
            subscription);
    KafkaSubscriber s = remember(b.build());
    s.start();
    return new Subscriber() {
      @Override
      public ConsumerStats stats() {
        return s.stats();
      }

      @Override
      public int inFlight() {
        return s.inFlight();
      }
    };
  }

  @Override
  protected RelayPublisher newPublisher() {
    return KafkaRelayPublisher.builder(ctx.bootstrapServers()).build();
  }

  @Override
  public Tap tap(String topic) {
    KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                ctx.bootstrapServers(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed"),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
    TopicPartition tp = new TopicPartition(topic, 0);
    consumer.assign(List.of(tp));
    consumer.seekToBeginning(List.of(tp));
    List<ConsumerRecord<byte[], byte[]>> seen = new ArrayList<>();
    return remember(
        new Tap() {
          @Override
          public RawRecord await(UUID id, Duration timeout) {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (true) {
              for (ConsumerRecord<byte[], byte[]> r : seen) {
                Header ce = r.headers().lastHeader(KafkaRecords.CE_ID);
                if (ce != null
                    && new String(ce.value(), StandardCharsets.UTF_8).equals(id.toString())) {
                  List<DeadLetterStore.Header> headers = new ArrayList<>();
                  for (Header h : r.headers()) {
                    headers.add(new DeadLetterStore.Header(h.key(), h.value()));
                  }
                  return new RawRecord(r.key(), r.value(), headers);
                }
              }
              if (System.nanoTime() > deadline) {
                throw new AssertionError("no record of " + id + " on " + topic + " in " + timeout);
              }
              consumer.poll(Duration.ofMillis(200)).forEach(seen::add);
            }
          }

          @Override
          public void close() {
            consumer.close(Duration.ofSeconds(5));
          }
        });
  }

  @Override
  public Function<DeadLetter, Message> deadLetterDecoder() {
    return KafkaDeadLetters.decoder();
  }
}
