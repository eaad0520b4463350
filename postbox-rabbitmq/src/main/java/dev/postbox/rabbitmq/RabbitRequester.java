package dev.postbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
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
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Requester} on RabbitMQ: requests are published with confirms (mandatory) to their
 * topic's exchange ({@link RabbitTopology}, the key's slot as routing key); replies come back to an
 * exclusive, auto-delete queue of this instance, {@code postbox.replies.<name>.<random>}, named in
 * each request's {@code reply-to} header (and its AMQP {@code reply_to} property). The queue lives
 * as long as the connection: replies to an earlier incarnation are not this one's, and a responder
 * replying to a queue that is gone gets its reply returned (see {@link RabbitResponder}). For
 * requests that must outlive the caller, through the outbox, see {@link #durableRequests}.
 *
 * <p>Defaults (the settings every requester shares are {@link RequesterBuilder}'s): at most {@value
 * RequesterBuilder#DEFAULT_MAX_IN_FLIGHT} requests in flight, timeouts checked every 10 ms, {@value
 * RequesterBuilder#DEFAULT_REMEMBERED_REQUESTS} finished requests remembered to tell late and
 * duplicate replies from unknown ones, late replies ignored (counted). A request whose topic has no
 * queue bound (no subscription declared it) fails with a {@link RabbitUnroutableException}.
 * Thread-safe.
 */
public final class RabbitRequester implements Requester {

  /** Default name, in the reply queue's name and in logs. */
  public static final String DEFAULT_NAME = "requester";

  private static final Pattern NAME = Pattern.compile("[a-zA-Z0-9_-]{1,100}");
  private static final Logger log = LoggerFactory.getLogger(RabbitRequester.class);

  private final ConnectionFactory factory;
  private final String name;
  private final String replyQueue;
  private final RequesterEngine engine;
  private final ConcurrentNavigableMap<Long, CompletableFuture<Void>> unconfirmed =
      new ConcurrentSkipListMap<>();
  private final Map<String, String> returned = new ConcurrentHashMap<>();
  private final Object publishLock = new Object();
  private Connection connection;
  private Channel publisher;
  private volatile boolean running;

  private RabbitRequester(Builder b) {
    this.factory = b.factory;
    this.name = b.name;
    this.replyQueue = "postbox.replies." + b.name + "." + UUID.randomUUID();
    this.engine =
        b.newEngine(
            name,
            new RequestTransport() {
              @Override
              public String replyAddress() {
                return replyQueue;
              }

              @Override
              public CompletableFuture<Void> send(Message request) {
                return publish(request);
              }
            });
  }

  /**
   * Durable requests answered on {@code replyTopic}: written through the outbox in the caller's
   * transaction (the relay publishes them), their replies read by an {@code EFFECTIVELY_ONCE}
   * {@link RabbitSubscriber} on {@code replyTopic} with {@link DurableRequests#replyHandler} (see
   * {@link DurableRequests}). A request's {@code reply-to} is {@code /exchanges/<replyTopic>}: the
   * {@link RabbitResponder} publishes the reply to the topic's exchange with the reply's slot (the
   * request's key) as routing key, so it waits in the reply subscription's durable shard queues
   * until an instance reads it, whichever and whenever. The reply subscription must have declared
   * its queues (started once) before the first reply, or the reply is returned and the responder's
   * attempt fails and is retried.
   *
   * @throws IllegalArgumentException naming {@code replyTopic} if it is not a legal topic name
   */
  public static DurableRequests durableRequests(String replyTopic) {
    return DurableRequests.replyingTo(ReplyAddress.ofTopic(replyTopic));
  }

  /** A builder for a requester on the broker at {@code uri} ({@code amqp://...}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /** Connects, declares the reply queue, starts consuming replies and checking timeouts. */
  public synchronized RabbitRequester start() {
    if (connection != null) {
      throw new IllegalStateException("already started");
    }
    try {
      connection = factory.newConnection("postbox-requester-" + name);
      Channel replies = connection.createChannel();
      replies.queueDeclare(replyQueue, false, true, true, null);
      replies.basicConsume(
          replyQueue,
          true, // a reply is matched in memory at once; an unmatched one is only counted
          new DefaultConsumer(replies) {
            @Override
            public void handleDelivery(
                String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
              received(envelope, properties, body);
            }
          });
      publisher = connection.createChannel();
      publisher.confirmSelect();
      publisher.addConfirmListener(
          (seq, multiple) -> settle(seq, multiple, null),
          (seq, multiple) -> settle(seq, multiple, "the broker refused (nack)"));
      publisher.addReturnListener(r ->
          returned.put(
              String.valueOf(r.getProperties().getMessageId()),
              r.getReplyCode() + " " + r.getReplyText() + " (exchange " + r.getExchange() + ")"));
    } catch (IOException | java.util.concurrent.TimeoutException e) {
      closeConnection();
      throw new RabbitTopologyException(
          "requester " + name + " could not set up its reply queue: " + e, e);
    }
    running = true;
    engine.start();
    return this;
  }

  private void received(Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    Message reply;
    try {
      reply = RabbitMessages.fromDelivery(replyQueue, envelope, properties, body);
    } catch (DecodingException e) {
      engine.pending().unusableReply();
      log.warn("{}: dropped an unreadable reply: {}", name, e.getMessage());
      return;
    }
    engine.replyReceived(reply);
  }

  private CompletableFuture<Void> publish(Message request) {
    CompletableFuture<Void> confirmed = new CompletableFuture<>();
    AMQP.BasicProperties props =
        RabbitMessages.toProperties(request).builder().replyTo(replyQueue).build();
    synchronized (publishLock) {
      try {
        long seq = publisher.getNextPublishSeqNo();
        unconfirmed.put(seq, confirmed);
        publisher.basicPublish(
            RabbitTopology.exchange(request.topic()),
            RabbitMessages.routingKey(request),
            true,
            props,
            request.payload().unsafeBytes());
        confirmed.whenComplete((ok, e) -> unconfirmed.remove(seq));
      } catch (IOException | RuntimeException e) {
        confirmed.completeExceptionally(e);
      }
    }
    String id = request.id().toString();
    return confirmed.thenRun(() -> {
      String why = returned.remove(id);
      if (why != null) {
        throw new RabbitUnroutableException(
            "request " + id + " to topic " + request.topic() + " was returned: " + why);
      }
    });
  }

  private void settle(long seq, boolean multiple, String nack) {
    ConcurrentNavigableMap<Long, CompletableFuture<Void>> done =
        multiple ? unconfirmed.headMap(seq, true) : unconfirmed.subMap(seq, true, seq, true);
    for (CompletableFuture<Void> f : done.values()) {
      if (nack == null) {
        f.complete(null);
      } else {
        f.completeExceptionally(new RabbitUnroutableException(nack));
      }
    }
  }

  /** The queue replies come back to (the requests' {@code reply-to}). */
  public String replyQueue() {
    return replyQueue;
  }

  @Override
  public CompletableFuture<Reply> request(Message request, Duration timeout) {
    return engine.request(request, timeout);
  }

  @Override
  public RequesterStats stats() {
    return engine.stats();
  }

  /** Fails the requests in flight and closes the connection (the reply queue goes). Idempotent. */
  @Override
  public synchronized void close() {
    if (!running) {
      return;
    }
    running = false;
    engine.close();
    closeConnection();
  }

  private void closeConnection() {
    if (connection != null) {
      try {
        connection.close(5_000);
      } catch (IOException | RuntimeException e) {
        log.debug("{}: closing the connection failed", name, e);
      }
    }
  }

  /** Builds a {@link RabbitRequester}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder extends RequesterBuilder<Builder> {
    private final ConnectionFactory factory = new ConnectionFactory();
    private String name = DEFAULT_NAME;

    private Builder(String uri) {
      Objects.requireNonNull(uri, "uri");
      try {
        factory.setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException("not an AMQP URI: " + uri, e);
      }
      // a lost connection takes the exclusive reply queue with it: requests in flight time out
      factory.setAutomaticRecoveryEnabled(false);
    }

    /**
     * Sets the name, in the reply queue's name and logs (default {@value #DEFAULT_NAME}; letters,
     * digits, {@code _} and {@code -}).
     */
    public Builder name(String name) {
      Objects.requireNonNull(name, "name");
      if (!NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("name must be 1-100 of [a-zA-Z0-9_-]: " + name);
      }
      this.name = name;
      return this;
    }

    /** Sets the time of the timeouts (default: the system's); for tests. Not an API. */
    Builder time(Ticker ticker, Sleeper sleeper) {
      return useTime(ticker, sleeper);
    }

    private RequesterEngine newEngine(String name, RequestTransport transport) {
      return engine(name, transport);
    }

    /** Builds the requester (not yet started). */
    public RabbitRequester build() {
      return new RabbitRequester(this);
    }
  }
}
