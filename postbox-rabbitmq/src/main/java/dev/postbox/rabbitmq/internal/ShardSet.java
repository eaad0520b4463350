package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.RecoveryListener;
import dev.postbox.core.engine.ShardBalancer;
import dev.postbox.core.time.Ticker;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shards one subscriber consumes: shard {@code s} is shard queue {@code s} of every topic of
 * the subscription, each consumed on a channel of its own. A shard is started (channels opened,
 * consumers subscribed) and stopped (hand-over: no delivery started any more, the running ones
 * finished, then the channels closed, so what is unacked goes back to the queue in order and the
 * broker's single active consumer moves to the next subscriber). Thread-safe.
 */
public final class ShardSet implements ShardBalancer.Shards {

  /** Opens the consumer of one shard queue on a channel it was given. */
  @FunctionalInterface
  public interface ConsumerFactory {
    ShardConsumer create(Channel channel, String topic, int shard, String queue);
  }

  private static final Logger log = LoggerFactory.getLogger(ShardSet.class);

  /** How often a hand-over re-checks, while it waits for running deliveries, that it should. */
  private static final Duration DRAIN_CHECK = Duration.ofSeconds(1);

  private final String subscription;
  private final Connection connection;
  private final Map<String, List<String>> queues;
  private final int prefetch;
  private final ConsumerFactory consumers;
  private final BooleanSupplier running;
  private final Ticker ticker;
  private final Map<Integer, List<ShardConsumer>> started = new TreeMap<>();

  /**
   * @param queues each topic's shard queues, by shard
   * @param running whether the subscriber runs (a hand-over stops waiting when it closes: the
   *     connection's close returns what is unacked)
   */
  public ShardSet(
      String subscription,
      Connection connection,
      Map<String, List<String>> queues,
      int prefetch,
      ConsumerFactory consumers,
      BooleanSupplier running,
      Ticker ticker) {
    this.subscription = subscription;
    this.connection = connection;
    this.queues = queues;
    this.prefetch = prefetch;
    this.consumers = consumers;
    this.running = running;
    this.ticker = ticker;
  }

  /** Consumes {@code shard} of every topic; idempotent. */
  @Override
  public void start(int shard) throws IOException {
    synchronized (started) {
      if (started.containsKey(shard)) {
        return;
      }
    }
    List<ShardConsumer> opened = new ArrayList<>();
    try {
      for (Map.Entry<String, List<String>> topic : queues.entrySet()) {
        String queue = topic.getValue().get(shard);
        Channel ch = connection.createChannel();
        ch.basicQos(prefetch);
        ShardConsumer consumer = consumers.create(ch, topic.getKey(), shard, queue);
        opened.add(consumer);
        ch.basicConsume(queue, false, consumer); // manual acks, even AT_MOST_ONCE
        if (ch instanceof Recoverable r) {
          // the epoch moves on the channel's shutdown signal, which the client dispatches after
          // the lost channel's last delivery; a recovery that re-ran later (a retried consumer
          // recovery) must not disown deliveries of the live channel. A recovered channel of a
          // shard handed over meanwhile is closed at once (see closeChannel)
          r.addRecoveryListener(
              new RecoveryListener() {
                @Override
                public void handleRecovery(Recoverable recoverable) {
                  if (consumer.retired()) {
                    log.info(
                        "{}: closing the recovered channel of {} (handed over)",
                        subscription,
                        queue);
                    Thread.ofVirtual().start(() -> closeChannel(consumer));
                    return;
                  }
                  log.info("{}: consuming {} again after recovery", subscription, queue);
                }

                @Override
                public void handleRecoveryStarted(Recoverable recoverable) {}
              });
        }
      }
    } catch (IOException | RuntimeException e) {
      opened.forEach(ShardSet::closeChannel);
      throw e;
    }
    synchronized (started) {
      started.put(shard, opened);
    }
  }

  /**
   * Hands {@code shard} over: its consumers start no delivery any more, the running ones finish
   * (however long they take: closing earlier would let the next instance run their keys at the same
   * time; the subscriber's close ends the wait), then their channels are closed. No {@code
   * basic.cancel} first: the next consumer would get later messages of a key while earlier ones are
   * still unacked here.
   */
  @Override
  public void stop(int shard) {
    List<ShardConsumer> mine;
    synchronized (started) {
      mine = started.remove(shard);
    }
    if (mine == null) {
      return;
    }
    mine.forEach(ShardConsumer::stop);
    try {
      for (ShardConsumer c : mine) {
        while (running.getAsBoolean() && !c.awaitIdle(DRAIN_CHECK, ticker)) {
          log.info(
              "{}: shard {} waits for {} running deliveries before its hand-over",
              subscription,
              shard,
              c.inFlight());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    mine.forEach(ShardConsumer::retire);
    if (running.getAsBoolean()) {
      mine.forEach(ShardSet::closeChannel);
    }
  }

  /** Starts every shard of {@code 0..shards-1}. */
  public void startAll(int shards) throws IOException {
    for (int s = 0; s < shards; s++) {
      start(s);
    }
  }

  /** The shards consumed now, sorted. */
  public Set<Integer> shards() {
    synchronized (started) {
      return new TreeSet<>(started.keySet());
    }
  }

  /** How many shard queues are consumed now (shards times topics). */
  public int queues() {
    synchronized (started) {
      return started.values().stream().mapToInt(List::size).sum();
    }
  }

  /**
   * Closes the channel of a handed-over shard consumer. A channel the connection's loss closed is
   * still one the client's automatic recovery would open again, with its consumer: its consumer is
   * cancelled and the channel closed anyway, which removes both from what the client recovers (each
   * call fails on the closed channel, after the client forgot it). Without that, the recovered
   * consumer of a shard this instance no longer owns started no delivery, and once it was the
   * queue's active consumer (single active consumer) it held up to the prefetch unacked until the
   * process ended: the shard stalled.
   */
  static void closeChannel(ShardConsumer c) {
    Channel ch = c.getChannel();
    if (!ch.isOpen()) {
      forget(ch, c.getConsumerTag());
      return;
    }
    try {
      ch.close();
    } catch (IOException | TimeoutException | RuntimeException e) {
      try {
        ch.abort();
      } catch (IOException | RuntimeException ignored) {
        // the connection is gone: its close returned the deliveries
      }
    }
  }

  /** Removes a closed channel and its consumer from what the client's automatic recovery opens. */
  private static void forget(Channel ch, String consumerTag) {
    if (consumerTag != null) {
      try {
        ch.basicCancel(consumerTag); // forgets the recorded consumer first, then fails: closed
      } catch (IOException | RuntimeException expected) {
        // the channel is closed
      }
    }
    try {
      ch.close(); // unregisters the channel from recovery first, then fails: closed
    } catch (IOException | TimeoutException | RuntimeException expected) {
      // the channel is closed
    }
  }
}
