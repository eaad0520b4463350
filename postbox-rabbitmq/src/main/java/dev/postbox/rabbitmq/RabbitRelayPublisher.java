package dev.postbox.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.ReplayHeaders;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.rabbitmq.internal.ConfirmedBatch;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox rows to RabbitMQ for the relay: one channel in <b>publisher-confirm</b> mode,
 * persistent messages mapped by {@link RabbitMessages} (CloudEvents AMQP binding) to the topic's
 * exchange ({@link RabbitTopology}) with the ordering key's slot as routing key, and the {@code
 * mandatory} flag. A dead letter's replay targeted at one consumer ({@link ReplayHeaders#TARGET})
 * goes to that subscription's own exchange instead (same routing key), so it reaches that
 * subscription's shard queue of its key and no other subscription.
 *
 * <ul>
 *   <li><b>Acknowledged</b> only when the broker confirmed the message ({@code basic.ack}; for a
 *       quorum queue, once a majority has it). Confirms are awaited asynchronously and in batches:
 *       {@link #send} publishes the whole batch and returns; {@link PendingPublish#outcomes()}
 *       waits for the confirms (at most the confirm timeout).
 *   <li><b>Unroutable</b> (returned because no queue is bound to the exchange): a failure of the
 *       topic ({@code topicWide}), which the relay holds instead of retrying, never a silent drop.
 *   <li><b>Nacked</b> by the broker, or unconfirmed when the channel or connection is lost or the
 *       confirm timeout passes: a transient failure, and the relay publishes the failed message and
 *       everything after it again (same ids: the consumer's inbox absorbs a message that was in
 *       fact enqueued); after a loss or a timeout the connection is discarded first and the resend
 *       goes on a new one, after a nack on the same one.
 *   <li><b>Exchanges</b> are declared (idempotently, on a separate channel, once per topic) before
 *       the first message of a topic; a refused declaration is a failure of the topic.
 * </ul>
 *
 * <p><b>Order.</b> One channel publishes in list order, and the broker enqueues a channel's
 * messages to one queue in that order, so a key's messages (one shard queue) stay in order. After a
 * publish error nothing later in the batch is sent. The relay pipelines ({@link
 * #pipelinesInOrder()}): it sends the next batch with {@link #sendAfter} on the same channel while
 * the previous one waits for its confirms (two batches unconfirmed at once); that batch is not sent
 * on any other channel, nor past a failure of the previous one the publisher knows of, and the
 * relay marks it only if every message of the previous batch was confirmed. When a channel or
 * connection is lost, what each queue got of it is a prefix of what was published to it, so the
 * relay's resend of the unconfirmed tail, in order, keeps every key's first copies in order. What
 * one channel's order cannot cover, a {@code basic.nack} of one message while a later message of
 * its key was confirmed (a broker-internal error, or a queue length limit with {@code
 * overflow=reject-publish} that had room again for the later message), or a message returned as
 * unroutable while a later one of its key found a queue bound meanwhile, is closed <b>per key</b>:
 * a message goes out only once the last message of its key in a batch whose outcomes the relay has
 * not collected yet (this batch or one ahead) is acknowledged; if that one failed, or no confirm
 * came within the confirm timeout (the connection is then discarded), the message and the rest of
 * its batch are reported failed unsent, and the relay's resend puts the failed one first. Different
 * keys stay pipelined; one key's messages go out a confirm round trip apart. (An earlier copy of
 * the same message, the relay's resend, never waits for itself.)
 *
 * <p>Every message carries the AMQP {@code timestamp} property, the time it was published (whole
 * seconds, AMQP's resolution): the subscriber's age of its oldest unfinished delivery reads it.
 *
 * <p>Used by one relay thread at a time; {@link #close()} may be called from any thread.
 */
public final class RabbitRelayPublisher implements RelayPublisher {

  /** Default time the publisher waits for a batch's confirms. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

  /** Default client-provided connection name. */
  public static final String DEFAULT_CONNECTION_NAME = "postbox-relay";

  private static final Logger log = LoggerFactory.getLogger(RabbitRelayPublisher.class);

  private final ConnectionFactory factory;
  private final Duration confirmTimeout;
  private final String connectionName;
  private final List<com.rabbitmq.client.Address> addresses;
  private final Set<String> declared = ConcurrentHashMap.newKeySet();
  // subscription exchanges found to exist, for targeted replays
  private final Set<String> routes = ConcurrentHashMap.newKeySet();
  private final Object lock = new Object();
  private Connection connection;
  private Channel channel;
  // the batches waiting for confirms (at most two: the relay pipelines one behind another)
  private final Queue<ConfirmedBatch> unconfirmed = new ConcurrentLinkedQueue<>();
  // per ordering key, its last message published in a batch whose outcomes the relay has not
  // collected yet: the next message of that key goes out only once this one is acknowledged
  private final Map<String, Sent> lastOfKey = new ConcurrentHashMap<>();
  private final BiConsumer<Channel, Message> beforePublish;
  private final Clock clock;
  private volatile boolean closed;

  private RabbitRelayPublisher(Builder b) {
    this.factory = b.factory;
    this.confirmTimeout = b.confirmTimeout;
    this.connectionName = b.connectionName;
    this.beforePublish = b.beforePublish;
    this.addresses = b.addresses;
    this.clock = b.clock;
  }

  /** Message {@code index} (id {@code id}) of {@code batch}. */
  private record Sent(ConfirmedBatch batch, int index, java.util.UUID id) {}

  /**
   * A builder for a publisher to the broker at {@code uri} ({@code amqp://user:pass@host/vhost}).
   */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    return send(messages).outcomes();
  }

  /**
   * Publishes the batch on the confirm channel and returns; {@link PendingPublish#outcomes()} waits
   * for the broker's confirms.
   */
  @Override
  public PendingPublish send(List<Message> messages) {
    int n = messages.size();
    if (n == 0) {
      return List::of;
    }
    Channel ch;
    try {
      ch = channel();
    } catch (IOException | TimeoutException | RuntimeException e) {
      log.warn("cannot open a confirm channel: {}", e.toString());
      return failed(n, e);
    }
    return publishOn(ch, messages, null);
  }

  /** Yes: {@link #sendAfter} publishes at once on the channel that carries the previous batch. */
  @Override
  public boolean pipelinesInOrder() {
    return true;
  }

  /**
   * Publishes the batch at once on the channel that carries {@code previous}, while {@code
   * previous} still waits for its confirms (the broker enqueues a channel's messages to a queue in
   * publish order, so each key's messages stay in order across the two). Nothing of the batch is
   * sent, every message reported failed (not permanent), if that channel is gone (a new one would
   * not be ordered behind it) or a message of {@code previous} is known to have failed (nacked,
   * returned, lost, not sent); and the publishing stops at the first message if such a failure
   * becomes known meanwhile. The relay then publishes them again after the failed one.
   */
  @Override
  public PendingPublish sendAfter(PendingPublish previous, List<Message> messages)
      throws InterruptedException {
    if (!(previous instanceof Confirms prior)) {
      return RelayPublisher.super.sendAfter(previous, messages);
    }
    int n = messages.size();
    if (n == 0) {
      return List::of;
    }
    synchronized (lock) {
      if (closed || channel != prior.channel() || !prior.channel().isOpen()) {
        return failed(
            n, new IllegalStateException("not sent: the previous batch's channel is gone"));
      }
    }
    if (prior.batch().failedSoFar()) {
      return failed(n, new IllegalStateException("not sent: an earlier batch failed"));
    }
    return publishOn(prior.channel(), messages, prior.batch());
  }

  /**
   * Publishes {@code messages} on {@code ch} in order; stops (the rest not sent) at a publish error
   * or once a message of {@code prior} (a batch in flight before this one, or null) failed.
   */
  private PendingPublish publishOn(Channel ch, List<Message> messages, ConfirmedBatch prior) {
    int n = messages.size();
    ConfirmedBatch batch = new ConfirmedBatch(ch, n);
    unconfirmed.add(batch);
    Set<String> heldTopics = new HashSet<>();
    boolean stop = false;
    for (int i = 0; i < n; i++) {
      if (i == n / 2) {
        CrashPoints.hit(CrashPoints.RELAY_MID_BATCH);
      }
      Message m = messages.get(i);
      if (!stop && prior != null && prior.failedSoFar()) {
        stop = true; // nothing more behind a failure of the batch ahead
      }
      if (stop) {
        batch.notSent(i, new PublishOutcome.Failed(new IllegalStateException("not sent"), false));
        continue;
      }
      if (heldTopics.contains(m.topic())) {
        batch.notSent(
            i,
            new PublishOutcome.Failed(
                new IllegalStateException("not sent: behind an unpublishable message of its topic"),
                false));
        continue;
      }
      if (!declared.contains(m.topic())) {
        try {
          declare(m.topic());
        } catch (RabbitTopologyException e) {
          batch.notSent(i, new PublishOutcome.Failed(e, false, true));
          heldTopics.add(m.topic());
          continue;
        } catch (IOException | TimeoutException | RuntimeException e) {
          batch.notSent(i, new PublishOutcome.Failed(e, false));
          stop = true;
          discard(e);
          continue;
        }
      }
      PublishOutcome.Failed behind = awaitEarlierOfKey(m);
      if (behind != null) {
        batch.notSent(i, behind);
        stop = true; // the relay publishes the earlier one again, then this one
        continue;
      }
      String exchange;
      try {
        exchange = exchangeOf(m);
      } catch (IOException | TimeoutException | RuntimeException e) {
        batch.notSent(i, new PublishOutcome.Failed(e, false));
        stop = true;
        discard(e);
        continue;
      }
      try {
        beforePublish.accept(ch, m);
        long seq = ch.getNextPublishSeqNo();
        batch.published(seq, i, m.id().toString());
        if (m.key().isPresent()) {
          lastOfKey.put(m.key().get(), new Sent(batch, i, m.id()));
        }
        ch.basicPublish(
            exchange,
            RabbitMessages.routingKey(m),
            true,
            RabbitMessages.toProperties(m, clock.instant()),
            m.payload().bytes());
      } catch (IOException | RuntimeException e) {
        batch.notSent(i, new PublishOutcome.Failed(e, false));
        stop = true; // keep later messages behind this one
        discard(e);
      }
    }
    return new Confirms(ch, batch);
  }

  /**
   * Waits (up to the confirm timeout) for the outcome of the last message published of {@code m}'s
   * key, unless that is an earlier copy of {@code m} or its batch's outcomes were collected; null
   * if {@code m} may go out (no such message, or it was acknowledged), else why not (failed, or no
   * confirm in time: the connection is then discarded).
   */
  private PublishOutcome.Failed awaitEarlierOfKey(Message m) {
    Sent earlier = m.key().map(lastOfKey::get).orElse(null);
    if (earlier == null || earlier.id().equals(m.id()) || !unconfirmed.contains(earlier.batch())) {
      return null;
    }
    PublishOutcome o;
    try {
      o = earlier.batch().outcomeOf(earlier.index(), confirmTimeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new PublishOutcome.Failed(e, false);
    }
    if (o instanceof PublishOutcome.Acknowledged) {
      return null;
    }
    if (o == null) {
      discard(new IllegalStateException("no confirm within " + confirmTimeout));
    }
    return new PublishOutcome.Failed(
        new IllegalStateException(
            "not sent: an earlier message of its key was not acknowledged ("
                + (o == null ? "no confirm in time" : "failed")
                + ")"),
        false);
  }

  private static PendingPublish failed(int n, Throwable e) {
    List<PublishOutcome> all = Collections.nCopies(n, new PublishOutcome.Failed(e, false));
    return () -> all;
  }

  /** A batch published on {@code channel}: its outcomes wait for its confirms. */
  private final class Confirms implements PendingPublish {
    private final Channel channel;
    private final ConfirmedBatch batch;

    Confirms(Channel channel, ConfirmedBatch batch) {
      this.channel = channel;
      this.batch = batch;
    }

    Channel channel() {
      return channel;
    }

    ConfirmedBatch batch() {
      return batch;
    }

    @Override
    public List<PublishOutcome> outcomes() throws InterruptedException {
      try {
        if (!batch.await(confirmTimeout)) {
          discard(new IllegalStateException("no confirms within " + confirmTimeout));
        }
        return batch.outcomes();
      } finally {
        unconfirmed.remove(batch);
        lastOfKey.values().removeIf(sent -> sent.batch() == batch);
      }
    }
  }

  /**
   * Opens the connection now instead of at the first batch, so that a wrong address, user, password
   * or vhost fails at start-up rather than as a transient failure the relay retries.
   *
   * @throws RabbitStartupException if the broker cannot be reached or refuses the login or vhost
   */
  public void connect() {
    try {
      channel();
    } catch (IOException | TimeoutException e) {
      throw RabbitConnect.refused("relay publisher", factory, e);
    }
  }

  @Override
  public void close() {
    closed = true;
    synchronized (lock) {
      closeConnection();
    }
  }

  /**
   * The exchange {@code m} goes to: the topic's, or for a replay targeted at one consumer ({@link
   * ReplayHeaders#TARGET}) that subscription's own exchange, so only its shard queue (by key)
   * receives it. When that exchange does not exist (the subscription never ran on this broker) the
   * topic's exchange, with a warning: the other subscriptions pass over the copy.
   */
  private String exchangeOf(Message m) throws IOException, TimeoutException {
    Optional<String> target = ReplayHeaders.target(m);
    if (target.isEmpty()) {
      return RabbitTopology.exchange(m.topic());
    }
    String own = RabbitTopology.subscriptionExchange(target.get(), m.topic());
    if (routes.contains(own) || exists(own)) {
      routes.add(own);
      return own;
    }
    log.warn(
        "message {} is a replay for a subscription whose exchange does not exist on topic '{}';"
            + " publishing it to the topic's exchange (the other subscriptions pass over it)",
        m.id(),
        m.topic());
    return RabbitTopology.exchange(m.topic());
  }

  /** Whether exchange {@code name} exists (a passive declaration on a short-lived channel). */
  private boolean exists(String name) throws IOException, TimeoutException {
    Channel admin = adminChannel();
    try {
      admin.exchangeDeclarePassive(name);
      return true;
    } catch (IOException e) {
      if (Integer.valueOf(404).equals(RabbitTopology.replyCode(e))) {
        return false;
      }
      throw e;
    } finally {
      if (admin.isOpen()) {
        admin.close();
      }
    }
  }

  private Channel adminChannel() throws IOException {
    Connection c;
    synchronized (lock) {
      c = connection;
    }
    if (c == null) {
      throw new IOException("no connection");
    }
    return c.createChannel();
  }

  /** Declares the exchange of {@code topic} on a short-lived channel (a refusal closes it). */
  private void declare(String topic) throws IOException, TimeoutException {
    Channel admin = adminChannel();
    try {
      RabbitTopology.declareExchange(admin, topic);
      declared.add(topic);
    } finally {
      if (admin.isOpen()) {
        admin.close();
      }
    }
  }

  private Channel channel() throws IOException, TimeoutException {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("publisher is closed");
      }
      if (channel != null && channel.isOpen()) {
        return channel;
      }
      closeConnection();
      connection = RabbitConnect.open(factory, addresses, connectionName);
      connection.addBlockedListener(
          reason -> log.warn("the broker blocks publishing: {}", reason),
          () -> log.info("the broker unblocked publishing"));
      Channel ch = connection.createChannel();
      ch.confirmSelect();
      ch.addConfirmListener(
          new ConfirmListener() {
            @Override
            public void handleAck(long seq, boolean multiple) {
              for (ConfirmedBatch b : unconfirmed) {
                if (b.on(ch)) {
                  b.acked(seq, multiple);
                }
              }
            }

            @Override
            public void handleNack(long seq, boolean multiple) {
              for (ConfirmedBatch b : unconfirmed) {
                if (b.on(ch)) {
                  b.nacked(seq, multiple);
                }
              }
            }
          });
      ch.addReturnListener(r -> {
        for (ConfirmedBatch b : unconfirmed) {
          if (b.on(ch)) {
            b.returned(
                r.getProperties().getMessageId(),
                r.getReplyCode(),
                r.getReplyText(),
                r.getExchange());
          }
        }
      });
      ch.addShutdownListener(cause -> {
        for (ConfirmedBatch b : unconfirmed) {
          if (b.on(ch)) {
            b.lost(cause);
          }
        }
      });
      channel = ch;
      return ch;
    }
  }

  /** Drops the connection after a failure; the next batch opens a new one. */
  private void discard(Throwable cause) {
    log.warn("publish failed; discarding the connection: {}", cause.toString());
    synchronized (lock) {
      closeConnection();
    }
  }

  private void closeConnection() {
    Connection c = connection;
    connection = null;
    channel = null;
    declared.clear();
    routes.clear();
    if (c != null && c.isOpen()) {
      try {
        c.close(5_000);
      } catch (IOException | RuntimeException e) {
        c.abort();
      }
    }
  }

  /** Builds a {@link RabbitRelayPublisher}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory factory = new ConnectionFactory();
    private Clock clock = Clock.systemUTC();
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private String connectionName = DEFAULT_CONNECTION_NAME;
    private BiConsumer<Channel, Message> beforePublish = (ch, m) -> {};
    private List<com.rabbitmq.client.Address> addresses = List.of();

    private Builder(String uri) {
      Objects.requireNonNull(uri, "uri");
      try {
        factory.setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException("not an AMQP URI: " + uri, e);
      }
      factory.setAutomaticRecoveryEnabled(false); // a lost connection fails the batch; next opens
    }

    /**
     * The clock of the {@code timestamp} property stamped on every message at publishing (default:
     * system UTC); consumers read a message's age from it.
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** How long a batch waits for its confirms before they count as failed (default 30 s). */
    public Builder confirmTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("confirmTimeout must be positive");
      }
      this.confirmTimeout = timeout;
      return this;
    }

    /**
     * The brokers to connect to, tried in the order given ({@code host} or {@code host:port};
     * without a port the protocol's), instead of the URI's host and port; the URI still gives the
     * user, password and vhost (default: the URI's host and port only).
     */
    public Builder addresses(List<String> hostPorts) {
      this.addresses = RabbitConnect.addresses(hostPorts);
      return this;
    }

    /**
     * TLS with {@code context} (the trust and key material, e.g. from a Spring Boot SSL bundle),
     * verifying the broker's host name (default: as the URI says; an {@code amqps://} URI alone
     * encrypts without checking the broker's certificate).
     */
    public Builder sslContext(javax.net.ssl.SSLContext context) {
      RabbitConnect.useTls(factory, context);
      return this;
    }

    /** The client-provided connection name shown by the broker (default {@code postbox-relay}). */
    public Builder connectionName(String name) {
      this.connectionName = Objects.requireNonNull(name, "name");
      return this;
    }

    /**
     * A fault hook for tests: runs on the publishing thread just before each message goes out on
     * the confirm channel (after any wait for an earlier message of its key).
     */
    Builder beforePublish(BiConsumer<Channel, Message> hook) {
      this.beforePublish = Objects.requireNonNull(hook, "hook");
      return this;
    }

    /** Builds the publisher; the connection is opened lazily on the first batch. */
    public RabbitRelayPublisher build() {
      return new RabbitRelayPublisher(this);
    }
  }
}
