package dev.postbox.bench.internal;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.rabbitmq.RabbitMessages;
import dev.postbox.rabbitmq.RabbitTopology;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The broker side of the shard-scaling figures ({@link RabbitScaling}, {@link RabbitHandover}): a
 * subscription's shard queues declared for one consumer mode, filled with the benchmark's messages
 * (keys {@code key-0} to {@code key-999}), read back (consumer counts) and deleted. Thread-safe.
 */
final class RabbitWork {

  private static final AtomicInteger SEQ = new AtomicInteger();

  private final String uri;

  RabbitWork(String uri) {
    this.uri = uri;
  }

  String uri() {
    return uri;
  }

  Connection connect(String name) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    return f.newConnection(name);
  }

  /** A new topic with {@code shards} queues of {@code subscription}, consumed as {@code mode}. */
  String topic(String prefix, String subscription, int shards, RabbitTopology.Consumers mode)
      throws Exception {
    String topic =
        "bench." + prefix + "." + ProcessHandle.current().pid() + "." + SEQ.incrementAndGet();
    try (Connection c = connect("bench-setup");
        Channel ch = c.createChannel()) {
      RabbitTopology.declareShards(ch, subscription, topic, shards, mode);
    }
    return topic;
  }

  /** Publishes messages {@code from} to {@code to - 1} of {@code topic}, confirmed (not timed). */
  void fill(String topic, int from, int to) throws Exception {
    try (Connection c = connect("bench-fill")) {
      Channel ch = c.createChannel();
      ch.confirmSelect();
      for (int i = from; i < to; i++) {
        publish(ch, topic, i);
        if (i % 1000 == 999) {
          ch.waitForConfirmsOrDie(60_000);
        }
      }
      ch.waitForConfirmsOrDie(60_000);
    }
  }

  /** Publishes message {@code i} of {@code topic} on {@code ch}, persistent and mandatory. */
  static void publish(Channel ch, String topic, long i) throws java.io.IOException {
    Message m = BenchEnv.message(topic, i);
    ch.basicPublish(
        RabbitTopology.exchange(topic),
        RabbitMessages.routingKey(m),
        true,
        RabbitMessages.toProperties(m),
        m.payload().bytes());
  }

  /** How many consumers each shard queue of {@code subscription} has, by shard. */
  int[] consumers(String subscription, String topic, int shards) throws Exception {
    int[] out = new int[shards];
    try (Connection c = connect("bench-probe");
        Channel ch = c.createChannel()) {
      for (int i = 0; i < shards; i++) {
        out[i] =
            ch.queueDeclarePassive(RabbitTopology.queue(subscription, topic, i)).getConsumerCount();
      }
    }
    return out;
  }

  /** Deletes the shard queues of {@code subscription} and the topic's exchange. */
  void delete(String subscription, String topic, int shards) throws Exception {
    try (Connection c = connect("bench-cleanup");
        Channel ch = c.createChannel()) {
      for (int i = 0; i < shards; i++) {
        ch.queueDelete(RabbitTopology.queue(subscription, topic, i));
      }
      ch.exchangeDelete(RabbitTopology.exchange(topic));
    }
  }
}
