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
import dev.postbox.rabbitmq.RabbitMessages;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
 * broker redelivers them) and are never acked on the new channel. Thread-safe: the connection's
 * thread delivers, workers ack.
 */
public final class ShardConsumer extends DefaultConsumer {

  private static final Logger log = LoggerFactory.getLogger(ShardConsumer.class);

  private final String topic;
  private final int shard;
  private final String queue;
  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final KeyedExecutor executor;
  private final InFlight inFlight;
  private final BooleanSupplier running;
  private final AtomicLong epoch = new AtomicLong();

  /** A consumer of {@code queue} (shard {@code shard} of {@code topic}) on {@code channel}. */
  public ShardConsumer(
      Channel channel,
      String topic,
      int shard,
      String queue,
      Subscription subscription,
      DeliveryProcessor processor,
      KeyedExecutor executor,
      InFlight inFlight,
      BooleanSupplier running) {
    super(channel);
    this.topic = topic;
    this.shard = shard;
    this.queue = queue;
    this.subscription = subscription;
    this.processor = processor;
    this.executor = executor;
    this.inFlight = inFlight;
    this.running = running;
  }

  /** The channel or its connection was lost or recovered: earlier deliveries are not ours. */
  public void newEpoch() {
    epoch.incrementAndGet();
  }

  @Override
  public void handleDelivery(
      String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
    processor.received(1);
    long tag = envelope.getDeliveryTag();
    long mine = epoch.get();
    byte[] key =
        envelope.getRoutingKey() == null
            ? null
            : envelope.getRoutingKey().getBytes(StandardCharsets.UTF_8);
    Incoming in =
        new Incoming(
            topic,
            shard,
            tag,
            () -> RabbitMessages.fromDelivery(topic, envelope, properties, body),
            key,
            body,
            RabbitMessages.deadLetterHeaders(properties));
    boolean atMostOnce = subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE;
    if (atMostOnce) {
      ack(tag, mine); // before handling: a crash now loses the message, never repeats it
    }
    inFlight.started();
    executor.submit(lane(envelope), () -> run(in, tag, mine, atMostOnce));
  }

  private Object lane(Envelope envelope) {
    return switch (subscription.ordering()) {
      case UNORDERED -> null;
      case PARTITION -> queue;
      case KEY -> new KeyLane(queue, envelope.getRoutingKey());
    };
  }

  private record KeyLane(String queue, String key) {}

  private void run(Incoming in, long tag, long mine, boolean atMostOnce) {
    try {
      if (!running.getAsBoolean() || epoch.get() != mine) {
        processor.abandoned(1);
        return;
      }
      boolean finished = false;
      try {
        finished = processor.process(in, () -> running.getAsBoolean() && epoch.get() == mine);
      } catch (RuntimeException e) {
        log.error("{}: unexpected failure at {} tag {}", subscription.name(), queue, tag, e);
      }
      if (finished && !atMostOnce) {
        ack(tag, mine);
      }
    } finally {
      inFlight.finished();
    }
  }

  private void ack(long tag, long mine) {
    Channel ch = getChannel();
    synchronized (ch) {
      if (epoch.get() != mine || !ch.isOpen()) {
        return; // redelivered on the new channel; an ack here would hit another delivery
      }
      try {
        ch.basicAck(tag, false);
      } catch (IOException | RuntimeException e) {
        log.warn("{}: cannot ack {} tag {}: {}", subscription.name(), queue, tag, e.toString());
      }
    }
  }

  @Override
  public void handleCancel(String consumerTag) {
    log.warn(
        "{}: the broker cancelled the consumer of {} (queue deleted?); not consuming it any more",
        subscription.name(),
        queue);
  }

  @Override
  public void handleShutdownSignal(String consumerTag, ShutdownSignalException sig) {
    newEpoch();
    if (running.getAsBoolean()) {
      log.warn("{}: channel of {} lost: {}", subscription.name(), queue, sig.getMessage());
    }
  }
}
