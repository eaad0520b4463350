package dev.postbox.core.consumer;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The backlog of one queue of a queue-based subscription (one shard queue on RabbitMQ), as the
 * broker and, where known, the subscription's consumer report it. The one value type of queue lag:
 * the transport's probe produces it, the operations API, the command line and the console show it.
 *
 * @param subscription the subscription the queue belongs to
 * @param topic the topic the queue is bound to
 * @param shard the queue's shard number (0-based)
 * @param queue the queue's name
 * @param messagesReady messages waiting for delivery (delivered, unacknowledged ones not counted)
 * @param consumers consumers subscribed to the queue (with a single active consumer, the broker may
 *     report only the active one)
 * @param oldestUnfinishedAge the age of the oldest message a consumer received from the queue and
 *     has not finished; zero when none; empty when unknown (it is measured by the consumers: a
 *     probe elsewhere knows it only from what they report to a {@code ConsumerAgeStore}, and
 *     otherwise has the broker's counts only)
 * @param stalled messages wait and nobody consumes them, or the oldest unfinished message is older
 *     than the probe's threshold (a consumer hangs)
 */
public record QueueLag(
    String subscription,
    String topic,
    int shard,
    String queue,
    long messagesReady,
    int consumers,
    Optional<Duration> oldestUnfinishedAge,
    boolean stalled) {

  /** Validates: no null, no negative count or shard. */
  public QueueLag {
    Objects.requireNonNull(subscription, "subscription");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(queue, "queue");
    Objects.requireNonNull(oldestUnfinishedAge, "oldestUnfinishedAge");
    if (shard < 0) {
      throw new IllegalArgumentException("shard must be >= 0, was " + shard);
    }
    if (messagesReady < 0) {
      throw new IllegalArgumentException("messagesReady must be >= 0, was " + messagesReady);
    }
    if (consumers < 0) {
      throw new IllegalArgumentException("consumers must be >= 0, was " + consumers);
    }
  }

  /**
   * The broker's counts only: the age unknown; stalled when messages are ready with no consumer.
   */
  public QueueLag(
      String subscription,
      String topic,
      int shard,
      String queue,
      long messagesReady,
      int consumers) {
    this(
        subscription,
        topic,
        shard,
        queue,
        messagesReady,
        consumers,
        Optional.empty(),
        messagesReady > 0 && consumers == 0);
  }

  /**
   * Nothing waits: none ready and nothing unfinished. False when the age is unknown: none ready may
   * then also be a hung consumer holding its prefetched messages.
   */
  public boolean idle() {
    return messagesReady == 0 && oldestUnfinishedAge.map(Duration::isZero).orElse(false);
  }
}
