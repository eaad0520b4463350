package dev.postbox.admin;

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
   * One queue of one subscription, as the broker reports it.
   *
   * @param messagesReady messages waiting for delivery (delivered, unacked ones not counted)
   * @param consumers consumers subscribed to the queue
   */
  record QueueLag(
      String subscription,
      String topic,
      int shard,
      String queue,
      long messagesReady,
      int consumers) {

    /** Messages wait and nobody consumes them: stalled (none waiting: idle or keeping up). */
    public boolean stalled() {
      return messagesReady > 0 && consumers == 0;
    }
  }
}
