package dev.postbox.admin;

import java.time.Duration;
import java.util.List;

/**
 * Where the backlog of queue-based consumers is measured: a transport's queue probe (for RabbitMQ,
 * {@code RabbitLagProbe} of postbox-rabbitmq, adapted by the front end). The operations API names
 * no transport, so the front end supplies it.
 */
@FunctionalInterface
public interface QueueLagSource {

  /** The backlog of each queue of each subscription measured now. */
  List<QueueLag> read();

  /**
   * One queue of one subscription, as the broker (and, where known, its consumer) reports it.
   *
   * @param messagesReady messages waiting for delivery (delivered, unacked ones not counted)
   * @param consumers consumers subscribed to the queue
   * @param oldestUnfinishedAge age of the oldest message a consumer received from the queue and has
   *     not finished; zero when none; null when unknown (measured only in the consumer's process)
   * @param stalled messages wait and nobody consumes them, or the oldest unfinished message is
   *     older than the probe's threshold (a consumer hangs)
   * @param idle nothing waits: none ready and nothing unfinished (false when the age is unknown)
   */
  record QueueLag(
      String subscription,
      String topic,
      int shard,
      String queue,
      long messagesReady,
      int consumers,
      Duration oldestUnfinishedAge,
      boolean stalled,
      boolean idle) {

    /**
     * The broker's counts only: no age; stalled when messages are ready with no consumer, never
     * idle (none ready may be a hung consumer holding its prefetched messages).
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
          null,
          messagesReady > 0 && consumers == 0,
          false);
    }
  }
}
