package dev.postbox.bench.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitRequester;
import dev.postbox.rabbitmq.RabbitResponder;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Request/reply on RabbitMQ for {@link RrBench}: a {@link RabbitRequester} (its exclusive reply
 * queue; requests published mandatory with confirms) and a {@link RabbitResponder} on an {@code
 * EFFECTIVELY_ONCE} {@link RabbitSubscriber} of the request topic ({@value
 * RabbitTopology#DEFAULT_SHARDS} quorum shard queues, prefetch {@value
 * RabbitSubscriber#DEFAULT_PREFETCH}; each request one inbox transaction that stores the reply, the
 * reply published after the commit, mandatory, its confirm awaited before the request is acked).
 * Beside it a bare amqp-client echo with the same settings and no database: requests with the same
 * properties and body published mandatory with confirms to the same topology (exchange, key slots,
 * {@value RabbitTopology#DEFAULT_SHARDS} quorum queues), an echo consumer per shard queue (prefetch
 * {@value RabbitSubscriber#DEFAULT_PREFETCH}, manual acks) publishing each body to the request's
 * {@code reply_to} queue, mandatory, and acking the request at the reply's confirm; the client
 * reads an exclusive auto-delete reply queue.
 */
final class RrRabbit implements RoundTrips {

  private final List<AutoCloseable> open = new ArrayList<>();
  private final int concurrency;
  private final ResponderTimings timings;
  private final String requests;
  private final RabbitRequester requester;
  private final String echoTopic;
  private final String echoReplyQueue;
  private final Channel echoClient;
  private final Object echoPublishLock = new Object();
  private final Map<String, CompletableFuture<Void>> echoes = new ConcurrentHashMap<>();
  private final ExecutorService acker = Executors.newSingleThreadExecutor();

  RrRabbit(BenchEnv env, String uri, int concurrency) throws Exception {
    this.concurrency = concurrency;
    Db db = env.database("rr_rabbit", concurrency + 4);
    String suffix =
        ProcessHandle.current().pid() + "." + UUID.randomUUID().toString().substring(0, 8);
    requests = "bench.rr-requests." + suffix;
    Subscription sub =
        Subscription.builder("rr-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(requests)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .concurrency(concurrency)
            .build();
    Payload answer = Payload.json("{\"authorised\":true}");
    RabbitResponder responder = RabbitResponder.builder(uri).build();
    open.add(responder);
    timings = new ResponderTimings(responder.handler(sub, d -> answer));
    RabbitSubscriber server =
        RabbitSubscriber.builder(uri, sub)
            .inbox(PostgresInboxStore.create(db.dataSource()))
            .handler(timings)
            .build();
    open.add(server);
    server.start(); // declares the request topic's exchange and shard queues
    requester =
        RabbitRequester.builder(uri).maxInFlight(50_000).rememberedRequests(0).build().start();
    open.add(requester);

    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    Connection echoServer = f.newConnection("bench-echo-server");
    open.add(echoServer);
    Connection echoClientConnection = f.newConnection("bench-echo-client");
    open.add(echoClientConnection);
    echoTopic = "bench.rr-echo." + suffix;
    List<String> queues;
    try (Channel setup = echoServer.createChannel()) {
      queues =
          RabbitTopology.declareShards(setup, "echo", echoTopic, RabbitTopology.DEFAULT_SHARDS);
    }
    for (String q : queues) {
      serveEcho(echoServer.createChannel(), q);
    }
    Channel replies = echoClientConnection.createChannel();
    echoReplyQueue = "bench.rr-echo-replies." + suffix;
    replies.queueDeclare(echoReplyQueue, false, true, true, null);
    replies.basicConsume(
        echoReplyQueue,
        true,
        new DefaultConsumer(replies) {
          @Override
          public void handleDelivery(
              String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
            CompletableFuture<Void> done = echoes.remove(properties.getCorrelationId());
            if (done != null) {
              done.complete(null);
            }
          }
        });
    echoClient = echoClientConnection.createChannel();
    echoClient.confirmSelect(); // confirms come and go unread: the product's requester waits for
    // its reply, not for its request's confirm
  }

  /** The echo of one shard queue: each request's body to its reply_to, acked at the confirm. */
  private void serveEcho(Channel ch, String queue) throws IOException {
    ch.basicQos(RabbitSubscriber.DEFAULT_PREFETCH);
    ch.confirmSelect();
    NavigableMap<Long, Long> unconfirmed = new ConcurrentSkipListMap<>();
    ch.addConfirmListener(
        (seq, multiple) -> {
          NavigableMap<Long, Long> done =
              multiple ? unconfirmed.headMap(seq, true) : unconfirmed.subMap(seq, true, seq, true);
          List<Long> tags = new ArrayList<>(done.values());
          done.clear();
          acker.execute(() -> {
            for (long tag : tags) {
              try {
                ch.basicAck(tag, false);
              } catch (IOException e) {
                throw new IllegalStateException(e);
              }
            }
          });
        },
        (seq, multiple) -> {
          throw new IllegalStateException("echo reply nacked: " + seq);
        });
    ch.basicConsume(
        queue,
        false,
        new DefaultConsumer(ch) {
          @Override
          public void handleDelivery(
              String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
              throws IOException {
            unconfirmed.put(ch.getNextPublishSeqNo(), envelope.getDeliveryTag());
            ch.basicPublish("", properties.getReplyTo(), true, properties, body);
          }
        });
  }

  @Override
  public String transport() {
    return "rabbitmq";
  }

  private Message message(String topic, int i) {
    return Message.builder(topic, "charge.authorise")
        .key("k" + (i % BenchEnv.KEYS))
        .jsonPayload(BenchEnv.payload(i))
        .build();
  }

  @Override
  public CompletableFuture<?> request(int i) {
    return requester.request(message(requests, i), java.time.Duration.ofMinutes(5));
  }

  @Override
  public CompletableFuture<?> echo(int i) {
    Message m = message(echoTopic, i);
    String id = m.id().toString();
    // the properties the requester sends: the message's, its correlation id and reply-to
    AMQP.BasicProperties props =
        RabbitMessages.toProperties(
                m.toBuilder()
                    .correlationId(id)
                    .header(RequestReplyHeaders.REPLY_TO, echoReplyQueue)
                    .build())
            .builder()
            .replyTo(echoReplyQueue)
            .build();
    CompletableFuture<Void> f = new CompletableFuture<Void>().orTimeout(5, TimeUnit.MINUTES);
    echoes.put(id, f);
    synchronized (echoPublishLock) {
      try {
        echoClient.basicPublish(
            RabbitTopology.exchange(echoTopic),
            RabbitMessages.routingKey(m),
            true,
            props,
            m.payload().unsafeBytes());
      } catch (IOException e) {
        echoes.remove(id);
        f.completeExceptionally(e);
      }
    }
    return f;
  }

  @Override
  public String profile() {
    return timings.takeSummary();
  }

  @Override
  public String settings() {
    return RabbitTopology.DEFAULT_SHARDS
        + " quorum shard queues, prefetch "
        + RabbitSubscriber.DEFAULT_PREFETCH
        + ", responder concurrency "
        + concurrency
        + ", one inbox transaction per request storing the reply, reply published (mandatory,"
        + " confirmed) after the commit; requests published mandatory with confirms; echo with the"
        + " same topology, properties and confirms (the request acked at its reply's confirm), no"
        + " database";
  }

  @Override
  public void close() throws Exception {
    for (AutoCloseable c : open.reversed()) {
      try {
        c.close();
      } catch (Exception e) {
        // the end of a run: nothing left to protect
      }
    }
    acker.shutdownNow();
  }
}
