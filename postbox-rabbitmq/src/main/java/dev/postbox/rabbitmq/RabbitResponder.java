package dev.postbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.reply.ReplySender;
import dev.postbox.core.engine.reply.ResponderHandler;
import dev.postbox.core.reply.ReplyHandler;
import dev.postbox.rabbitmq.internal.PendingConfirms;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The responder side of request/reply on RabbitMQ: {@link #handler} makes the handler of an {@code
 * EFFECTIVELY_ONCE} {@link RabbitSubscriber} on the request topic, which runs a {@link
 * ReplyHandler} in the request's inbox transaction, stores the reply with the inbox row and, after
 * the commit, publishes it (mandatory, with a confirm) to the address the request names in {@code
 * reply-to}: a {@link RabbitRequester}'s queue through the default exchange, or the reply topic of
 * a durable request ({@code /exchanges/<topic>}, {@link RabbitRequester#durableRequests}) through
 * the topic's exchange with the reply's slot as routing key, as the relay publishes. A repeated
 * request gets the stored reply again without the effect running twice.
 *
 * <p>A reply to a queue that no longer exists (its requester is gone), or to a reply topic no
 * subscription has declared queues for, is returned by the broker: the attempt fails with a {@link
 * RabbitUnroutableException} naming the queue or topic, is retried with the stored reply, and is
 * given up per the subscription's failure handler, the reason in the dead letter (logged there).
 * Replies of concurrent handlers share one confirm-mode channel and wait for their confirms
 * together. Defaults: replies of type {@code <request type>.reply}, source {@value
 * Message#DEFAULT_SOURCE}, at most 30 s waiting for a confirm. Thread-safe.
 */
public final class RabbitResponder implements AutoCloseable {

  /** Default longest wait for the broker's confirm of a reply. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

  /** Default source of the replies. */
  public static final String DEFAULT_SOURCE = Message.DEFAULT_SOURCE;

  private static final Logger log = LoggerFactory.getLogger(RabbitResponder.class);

  private final ConnectionFactory factory;
  private final String replyType;
  private final String source;
  private final Duration confirmTimeout;
  private final Clock clock;
  private Connection connection;
  private Channel channel;
  private PendingConfirms confirms = new PendingConfirms();
  private final Set<String> declared = new HashSet<>(); // reply topics' exchanges, guarded by this
  private boolean closed;

  private RabbitResponder(Builder b) {
    this.factory = b.factory;
    this.replyType = b.replyType;
    this.source = b.source;
    this.confirmTimeout = b.confirmTimeout;
    this.clock = b.clock;
  }

  /** A builder for a responder on the broker at {@code uri} ({@code amqp://...}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
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
    return new ResponderHandler(
        handler,
        new ReplySender() {
          @Override
          public String topicOf(String replyTo) {
            return ReplyAddress.parse(replyTo).topic();
          }

          @Override
          public void send(String replyTo, Message reply) throws Exception {
            publish(ReplyAddress.parse(replyTo), reply);
          }
        },
        replyType,
        source,
        clock);
  }

  /**
   * Publishes one reply and waits for its confirm: to a reply queue through the default exchange,
   * to a reply topic through its exchange with the reply's slot as routing key. Replies of
   * concurrent handlers share the channel and wait for their confirms at once (the broker confirms
   * them together), so the responder's rate is not one confirm round trip per reply.
   */
  private void publish(ReplyAddress address, Message reply)
      throws IOException, InterruptedException, TimeoutException {
    String id = reply.id().toString();
    AMQP.BasicProperties props = RabbitMessages.toProperties(reply);
    Channel ch;
    CompletableFuture<Optional<String>> confirmed;
    synchronized (this) {
      ch = channel();
      if (address instanceof ReplyAddress.Topic t && !declared.contains(t.topic())) {
        declareExchange(t.topic());
      }
      long seq = ch.getNextPublishSeqNo();
      confirmed = confirms.publishing(seq, id);
      try {
        switch (address) {
          case ReplyAddress.Queue q ->
              ch.basicPublish("", q.name(), true, props, reply.payload().unsafeBytes());
          case ReplyAddress.Topic t ->
              ch.basicPublish(
                  RabbitTopology.exchange(t.topic()),
                  RabbitMessages.routingKey(reply),
                  true,
                  props,
                  reply.payload().unsafeBytes());
        }
      } catch (IOException | RuntimeException e) {
        confirms.notPublished(seq);
        closeConnection(); // a fresh channel next time
        throw e;
      }
    }
    Optional<String> returnedFor;
    try {
      returnedFor = confirmed.get(confirmTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      closeIfStill(ch);
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new IOException(e.getCause());
    } catch (TimeoutException e) {
      closeIfStill(ch); // its other publishes fail too: they are retried on a fresh channel
      throw new TimeoutException(
          "no confirm of the reply to request "
              + reply.causationId().orElse("?")
              + " within "
              + confirmTimeout);
    }
    if (returnedFor.isPresent()) {
      String where =
          switch (address) {
            case ReplyAddress.Queue q -> "reply queue '" + q.name() + "' no longer exists";
            case ReplyAddress.Topic t ->
                "no queue is bound to reply topic '"
                    + t.topic()
                    + "' (start its reply subscription once: it declares its queues)";
          };
      log.warn(
          "the reply {} to request {} was returned: {} ({})",
          id,
          reply.causationId().orElse("?"),
          where,
          returnedFor.get());
      throw new RabbitUnroutableException(
          "the reply to request "
              + reply.causationId().orElse("?")
              + " was returned: "
              + where
              + " ("
              + returnedFor.get()
              + ")");
    }
  }

  /**
   * Declares the exchange of reply topic {@code topic} (idempotently, on a short-lived channel: a
   * refusal closes it), so that a reply no subscription receives is returned rather than closing
   * the publishing channel; once per topic and connection.
   */
  private void declareExchange(String topic) throws IOException, TimeoutException {
    Channel admin = connection.createChannel();
    try {
      RabbitTopology.declareExchange(admin, topic);
      declared.add(topic);
    } finally {
      if (admin.isOpen()) {
        admin.close();
      }
    }
  }

  /** Closes the connection if {@code ch} is still its channel (a fresh one opens next time). */
  private synchronized void closeIfStill(Channel ch) {
    if (channel == ch) {
      closeConnection();
    }
  }

  private Channel channel() throws IOException, TimeoutException {
    if (closed) {
      throw new IllegalStateException("responder is closed");
    }
    if (channel != null && channel.isOpen()) {
      return channel;
    }
    closeConnection();
    connection = factory.newConnection("postbox-responder");
    Channel ch = connection.createChannel();
    ch.confirmSelect();
    PendingConfirms pending = new PendingConfirms();
    ch.addReturnListener(r ->
        pending.returned(
            String.valueOf(r.getProperties().getMessageId()),
            r.getReplyCode() + " " + r.getReplyText()));
    ch.addConfirmListener(pending::acked, pending::nacked);
    ch.addShutdownListener(cause -> pending.channelLost(String.valueOf(cause.getMessage())));
    channel = ch;
    confirms = pending;
    return ch;
  }

  private void closeConnection() {
    if (connection != null) {
      try {
        connection.close(5_000);
      } catch (IOException | RuntimeException e) {
        log.debug("closing the responder's connection failed", e);
      }
      confirms.channelLost("the responder closed its connection");
      connection = null;
      channel = null;
      declared.clear();
    }
  }

  /** Closes the connection. Idempotent. */
  @Override
  public synchronized void close() {
    closed = true;
    closeConnection();
  }

  /** Builds a {@link RabbitResponder}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory factory = new ConnectionFactory();
    private String replyType;
    private String source = DEFAULT_SOURCE;
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private Clock clock = Clock.systemUTC();

    private Builder(String uri) {
      Objects.requireNonNull(uri, "uri");
      try {
        factory.setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException("not an AMQP URI: " + uri, e);
      }
      factory.setAutomaticRecoveryEnabled(false); // a lost channel fails the reply; next reopens
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

    /** Sets the longest wait for the broker's confirm of a reply (default 30 s). */
    public Builder confirmTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("confirmTimeout must be positive: " + timeout);
      }
      this.confirmTimeout = timeout;
      return this;
    }

    /** Sets the clock of the replies' time (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Builds the responder (it connects at its first reply). */
    public RabbitResponder build() {
      return new RabbitResponder(this);
    }
  }
}
