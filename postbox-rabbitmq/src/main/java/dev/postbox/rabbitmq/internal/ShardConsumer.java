package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitTopology;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes one shard queue on its own channel (manual acks, the channel's prefetch as the in-flight
 * bound) and feeds the engine: each delivery runs on the key's lane of the {@link KeyedExecutor}
 * and is acked when the engine finished it ({@code AT_MOST_ONCE}: acked before it runs). A delivery
 * the engine abandoned is not acked: the broker delivers it again once the channel closes.
 *
 * <p>A delivery belongs to the channel's <em>epoch</em>: when the channel or its connection is lost
 * (and recovered), the epoch moves on, deliveries of the old one count as no longer owned (the
 * broker redelivers them) and are never acked on the new channel. A consumer the broker cancels
 * (queue deleted) declares its shard again and re-subscribes. Thread-safe: the connection's thread
 * delivers, workers ack.
 *
 * <p><b>Batches</b> (batch size above 1): deliveries wait in the shard's buffer, in delivery order,
 * and every delivery schedules a drain on the shard's one lane (whatever the ordering, as a Kafka
 * batch runs on its partition's lane). A drain takes what is buffered, up to the batch size, and
 * runs it through {@link DeliveryProcessor#processBatch} (one transaction for {@code
 * EFFECTIVELY_ONCE}; one record at a time if the batch fails); a drain that finds the buffer empty
 * does nothing. So a batch never waits for deliveries that have not arrived. Its deliveries are
 * acked, one by one, only after the batch finished.
 */
public final class ShardConsumer extends DefaultConsumer {

  /** Wait between re-subscription attempts after a consumer cancel. */
  public static final Duration RESUBSCRIBE_INTERVAL = Duration.ofSeconds(1);

  private static final Logger log = LoggerFactory.getLogger(ShardConsumer.class);

  private final String topic;
  private final int shard;
  private final int shards;
  private final String queue;
  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final KeyedExecutor executor;
  private final InFlight inFlight;
  private final BooleanSupplier running;
  private final Sleeper sleeper;
  private final WaitQueues retries;
  private final UnfinishedAges.Queue unfinished;
  private final AtomicLong epoch = new AtomicLong();
  private final InFlight own = new InFlight();
  private volatile boolean stopping;
  private volatile boolean retired;
  private final ArrayDeque<Buffered> buffer = new ArrayDeque<>();

  /**
   * A consumer of {@code queue} (shard {@code shard} of the {@code shards} of {@code topic}) on
   * {@code channel}.
   */
  public ShardConsumer(
      Channel channel,
      String topic,
      int shard,
      int shards,
      String queue,
      Subscription subscription,
      DeliveryProcessor processor,
      KeyedExecutor executor,
      InFlight inFlight,
      BooleanSupplier running,
      Sleeper sleeper,
      WaitQueues retries,
      UnfinishedAges.Queue unfinished) {
    super(channel);
    this.topic = topic;
    this.shard = shard;
    this.shards = shards;
    this.queue = queue;
    this.subscription = subscription;
    this.processor = processor;
    this.executor = executor;
    this.inFlight = inFlight;
    this.running = running;
    this.sleeper = sleeper;
    this.retries = retries;
    this.unfinished = unfinished;
  }

  /**
   * Starts no delivery any more (the shard is handed over): deliveries not started are abandoned,
   * to be returned when the channel closes; the running ones finish.
   */
  public void stop() {
    stopping = true;
  }

  /**
   * The hand-over is done (no delivery of this consumer runs any more): a delivery that still
   * reaches it comes through a channel the client recovered after the hand-over, which is closed at
   * once so that the queue's next consumer gets it.
   */
  public void retire() {
    stopping = true;
    retired = true;
  }

  /** Whether {@link #retire()} was called. */
  public boolean retired() {
    return retired;
  }

  /** Waits until none of this shard queue's deliveries runs, up to {@code timeout}. */
  public boolean awaitIdle(Duration timeout, Ticker ticker) throws InterruptedException {
    return own.awaitZero(timeout, ticker);
  }

  /** This shard queue's deliveries handed to the workers and not yet done. */
  public int inFlight() {
    return own.get();
  }

  /** Whether the subscriber runs and this shard is not being handed over. */
  private boolean live() {
    return running.getAsBoolean() && !stopping;
  }

  /** The channel or its connection was lost: earlier deliveries are not ours any more. */
  public void newEpoch() {
    epoch.incrementAndGet();
  }

  @Override
  public void handleDelivery(
      String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    if (retired) {
      // returned to the queue when the channel closes; never started here
      Thread.ofVirtual().start(() -> ShardSet.closeChannel(this));
      return;
    }
    processor.received(1);
    long tag = envelope.getDeliveryTag();
    long mine = epoch.get();
    int tier = retries.tier(properties);
    String routingKey = orderingKey(envelope, properties);
    List<DeadLetterStore.Header> headers = new ArrayList<>();
    for (DeadLetterStore.Header h : RabbitMessages.deadLetterHeaders(properties)) {
      if (!WaitQueues.added(h.name())) {
        headers.add(h); // the message as first received: without what retries added
      }
    }
    Incoming in =
        new Incoming(
            topic,
            shard,
            tag,
            () -> RabbitMessages.fromDelivery(topic, envelope, properties, body),
            routingKey == null ? null : routingKey.getBytes(StandardCharsets.UTF_8),
            body,
            List.copyOf(headers));
    boolean atMostOnce = subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE;
    if (atMostOnce) {
      ack(tag, mine); // before handling: a crash now loses the message, never repeats it
    }
    inFlight.started();
    own.started();
    Object token = unfinished.received(properties); // done in run's or runBatch's finally
    WaitQueues.Received received = new WaitQueues.Received(properties, routingKey, queue);
    if (subscription.batchSize() > 1) {
      synchronized (buffer) {
        buffer.addLast(new Buffered(in, received, tag, mine, token));
      }
      executor.submit(queue, () -> runBatch(atMostOnce));
      return;
    }
    executor.submit(lane(routingKey), () -> run(in, received, tier, tag, mine, atMostOnce, token));
  }

  /**
   * A delivery waiting for its batch: what the engine reads, as received, its tag, epoch and token
   * in the unfinished deliveries.
   */
  private record Buffered(
      Incoming in, WaitQueues.Received received, long tag, long epoch, Object token) {}

  /**
   * The message's ordering key ({@value RabbitMessages#CE_PARTITIONKEY}), else its id, else the
   * routing key it came with: what its lane, the engine and a dead-letter exchange copy key on.
   * (The routing key a publisher sets is the key's slot, and a copy back from a wait queue is
   * routed by queue name.)
   */
  private static String orderingKey(Envelope envelope, AMQP.BasicProperties properties) {
    Object key =
        properties.getHeaders() == null
            ? null
            : properties.getHeaders().get(RabbitMessages.CE_PARTITIONKEY);
    if (key != null && !key.toString().isEmpty()) {
      return key.toString();
    }
    return properties.getMessageId() != null ? properties.getMessageId() : envelope.getRoutingKey();
  }

  private Object lane(String routingKey) {
    return switch (subscription.ordering()) {
      case UNORDERED -> null;
      case PARTITION -> queue;
      case KEY -> new KeyLane(queue, routingKey);
    };
  }

  private record KeyLane(String queue, String key) {}

  private void run(
      Incoming in,
      WaitQueues.Received received,
      int tier,
      long tag,
      long mine,
      boolean atMostOnce,
      Object token) {
    retries.remember(in, received);
    try {
      if (!live() || epoch.get() != mine) {
        processor.abandoned(1);
        return;
      }
      boolean finished = false;
      BooleanSupplier owned = () -> running.getAsBoolean() && epoch.get() == mine;
      try {
        finished =
            tier > 0
                ? retries.retry(in, received.properties(), tier, owned)
                : processor.process(in, owned);
      } catch (RuntimeException e) {
        log.error("{}: unexpected failure at {} tag {}", subscription.name(), queue, tag, e);
      }
      if (finished && !atMostOnce) {
        ack(tag, mine);
      }
    } finally {
      retries.forget(in);
      unfinished.done(token);
      inFlight.finished();
      own.finished();
    }
  }

  /**
   * Runs what is buffered (up to the batch size, in delivery order) as one batch; deliveries of an
   * older epoch are abandoned (the broker redelivers them), the rest acked once the batch finished.
   */
  private void runBatch(boolean atMostOnce) {
    List<Buffered> taken = new ArrayList<>();
    synchronized (buffer) {
      while (taken.size() < subscription.batchSize() && !buffer.isEmpty()) {
        taken.add(buffer.pollFirst());
      }
    }
    if (taken.isEmpty()) {
      return; // an earlier drain took this delivery into its batch
    }
    taken.forEach(b -> retries.remember(b.in(), b.received()));
    try {
      long mine = epoch.get();
      List<Buffered> live = taken.stream().filter(b -> b.epoch() == mine).toList();
      if (!live()) {
        processor.abandoned(taken.size());
        return;
      }
      processor.abandoned(taken.size() - live.size());
      if (live.isEmpty()) {
        return;
      }
      boolean finished = false;
      BooleanSupplier owned = () -> running.getAsBoolean() && epoch.get() == mine;
      try {
        finished = processor.processBatch(live.stream().map(Buffered::in).toList(), owned);
      } catch (RuntimeException e) {
        log.error(
            "{}: unexpected batch failure at {} tag {}",
            subscription.name(),
            queue,
            live.get(0).tag(),
            e);
      }
      if (finished && !atMostOnce) {
        ack(live.stream().mapToLong(Buffered::tag).toArray(), mine);
      }
    } finally {
      for (Buffered b : taken) {
        retries.forget(b.in());
        unfinished.done(b.token());
        inFlight.finished();
        own.finished();
      }
    }
  }

  private void ack(long tag, long mine) {
    ack(new long[] {tag}, mine);
  }

  /**
   * Acks {@code tags} one by one (never {@code multiple}: an earlier delivery left unacked, after
   * an unexpected failure, must not be acked with them), if the channel is still of epoch {@code
   * mine}.
   */
  private void ack(long[] tags, long mine) {
    Channel ch = getChannel();
    synchronized (ch) {
      if (epoch.get() != mine || !ch.isOpen()) {
        return; // redelivered on the new channel; an ack here would hit another delivery
      }
      for (long tag : tags) {
        try {
          ch.basicAck(tag, false);
        } catch (IOException | RuntimeException e) {
          log.warn("{}: cannot ack {} tag {}: {}", subscription.name(), queue, tag, e.toString());
          return;
        }
      }
    }
  }

  /**
   * The broker cancelled this consumer (its queue was deleted, or a quorum queue lost its leader):
   * declares the shard again and re-subscribes, on a thread of its own, retrying every {@link
   * #RESUBSCRIBE_INTERVAL} while the subscriber runs.
   */
  @Override
  public void handleCancel(String consumerTag) {
    log.warn(
        "{}: the broker cancelled the consumer of {} (queue deleted?); subscribing again",
        subscription.name(),
        queue);
    Thread.ofVirtual().name("postbox-resubscribe-" + queue).start(this::resubscribe);
  }

  private void resubscribe() {
    while (live()) {
      Channel ch = getChannel();
      try {
        try (Channel setup = ch.getConnection().createChannel()) {
          RabbitTopology.declareShard(
              setup,
              subscription.name(),
              topic,
              shard,
              shards,
              RabbitTopology.Consumers.of(subscription.ordering()));
        }
        ch.basicConsume(queue, false, this);
        log.info("{}: consuming {} again after a consumer cancel", subscription.name(), queue);
        return;
      } catch (IOException | TimeoutException | RuntimeException e) {
        log.warn("{}: cannot subscribe to {} again: {}", subscription.name(), queue, e.toString());
      }
      try {
        sleeper.sleep(RESUBSCRIBE_INTERVAL);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  @Override
  public void handleShutdownSignal(String consumerTag, ShutdownSignalException sig) {
    newEpoch();
    if (live()) { // not the close of a hand-over
      log.warn("{}: channel of {} lost: {}", subscription.name(), queue, sig.getMessage());
    }
  }
}
