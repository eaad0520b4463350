package dev.postbox.admin;

import dev.postbox.core.consumer.QueueLag;
import java.util.List;

/**
 * Where the backlog of queue-based consumers is measured: a transport's queue probe (for RabbitMQ,
 * {@code RabbitLagProbe::read} of postbox-rabbitmq, given by the front end as it is: it reads
 * core's {@link QueueLag}). The operations API names no transport, so the front end supplies it.
 */
@FunctionalInterface
public interface QueueLagSource {

  /** The backlog of each queue of each subscription measured now. */
  List<QueueLag> read();
}
