package dev.postbox.spec;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.rabbitmq.RabbitDeadLetters;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

/**
 * The spec's fixture on the test kit's shared RabbitMQ node: topics are fanout exchanges, each
 * subscription consumes 2 shard queues (so keys share a shard and key-level concurrency runs inside
 * one queue), {@link RabbitSubscriber}, {@link RabbitRelayPublisher} with publisher confirms.
 */
final class RabbitTransport extends AbstractTransport {

  static final int SHARDS = 2;

  private final RabbitMqServer server;

  RabbitTransport(PostboxTestContext ctx, RabbitMqServer server) {
    super(ctx);
    this.server = server;
  }

  @Override
  public String name() {
    return "rabbitmq";
  }

  @Override
  public String topic(String base) {
    return base + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Override
  public Subscriber subscribe(Subscription subscription, MessageHandler handler) {
    RabbitSubscriber.Builder b =
        stores(
            RabbitSubscriber.builder(server.uri(), subscription).handler(handler).shards(SHARDS),
            subscription);
    RabbitSubscriber s = remember(b.build());
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
    return RabbitRelayPublisher.builder(server.uri())
        .confirmTimeout(Duration.ofSeconds(10))
        .build();
  }

  @Override
  public Tap tap(String topic) {
    try {
      ConnectionFactory f = new ConnectionFactory();
      f.setUri(server.uri());
      Connection connection = f.newConnection("spec-tap");
      Channel ch = connection.createChannel();
      RabbitTopology.declareExchange(ch, topic);
      String queue = ch.queueDeclare("", false, true, true, null).getQueue();
      ch.queueBind(queue, RabbitTopology.exchange(topic), "");
      List<GetResponse> seen = new ArrayList<>();
      return remember(
          new Tap() {
            @Override
            public RawRecord await(UUID id, Duration timeout) throws Exception {
              long deadline = System.nanoTime() + timeout.toNanos();
              while (true) {
                for (GetResponse r : seen) {
                  if (id.toString().equals(r.getProps().getMessageId())) {
                    // the key on the wire: the partitionkey header (the routing key is its slot)
                    Object key = r.getProps().getHeaders().get(RabbitMessages.CE_PARTITIONKEY);
                    return new RawRecord(
                        (key != null ? key.toString() : r.getEnvelope().getRoutingKey())
                            .getBytes(StandardCharsets.UTF_8),
                        r.getBody(),
                        RabbitMessages.deadLetterHeaders(r.getProps()));
                  }
                }
                if (System.nanoTime() > deadline) {
                  throw new AssertionError("no delivery of " + id + " on " + topic);
                }
                GetResponse r = ch.basicGet(queue, true);
                if (r == null) {
                  Thread.sleep(50);
                } else {
                  seen.add(r);
                }
              }
            }

            @Override
            public void close() {
              try {
                connection.close();
              } catch (Exception e) {
                throw new IllegalStateException("closing the tap of " + topic, e);
              }
            }
          });
    } catch (Exception e) {
      throw new IllegalStateException("cannot tap " + topic + " on " + server.uri(), e);
    }
  }

  @Override
  public Function<DeadLetter, Message> deadLetterDecoder() {
    return RabbitDeadLetters.decoder();
  }
}
