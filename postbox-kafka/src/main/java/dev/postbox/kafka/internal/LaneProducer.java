package dev.postbox.kafka.internal;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * One lane's transactional producer under one lease: {@code transactional.id = <prefix>-lane-<n>},
 * so that the next owner's {@link #open} (its {@code initTransactions}) fences this one, in-flight
 * sends and open transaction included. Created once per lease; never re-initialised under the same
 * lease except by the relay's turn before a claim (see {@link TransactionalLanes}).
 */
final class LaneProducer {

  final LaneLease lease;
  final Producer<byte[], byte[]> producer;
  final String transactionalId;

  private LaneProducer(LaneLease lease, Producer<byte[], byte[]> producer, String id) {
    this.lease = lease;
    this.producer = producer;
    this.transactionalId = id;
  }

  /** The {@code transactional.id} of {@code lane} under {@code prefix}. */
  static String transactionalId(String prefix, int lane) {
    return prefix + "-lane-" + lane;
  }

  /** Creates the lane's producer and initialises its transactions (fencing earlier owners). */
  static LaneProducer open(
      Map<String, Object> base,
      String prefix,
      LaneLease lease,
      Function<Map<String, Object>, Producer<byte[], byte[]>> factory) {
    String id = transactionalId(prefix, lease.lane());
    Map<String, Object> config = new HashMap<>(base);
    config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
    config.put(
        ProducerConfig.CLIENT_ID_CONFIG,
        config.getOrDefault(ProducerConfig.CLIENT_ID_CONFIG, "postbox-relay")
            + "-lane-"
            + lease.lane());
    Producer<byte[], byte[]> p = factory.apply(config);
    try {
      p.initTransactions();
    } catch (RuntimeException e) {
      p.close(Duration.ZERO);
      throw e;
    }
    return new LaneProducer(lease, p, id);
  }

  /**
   * Commits the open transaction; a commit that times out ({@code max.block.ms}) is retried, as
   * Kafka allows, until {@code timeout} passed (then its {@link TimeoutException} is thrown, and
   * the producer must be closed: the commit may still complete).
   */
  void commit(Ticker ticker, Duration timeout) {
    long deadline = ticker.deadlineIn(timeout);
    while (true) {
      try {
        producer.commitTransaction();
        return;
      } catch (TimeoutException e) {
        if (ticker.reached(deadline)) {
          throw e;
        }
      }
    }
  }

  /** Closes the producer without waiting (its unsent records fail). */
  void close() {
    try {
      producer.close(Duration.ZERO);
    } catch (RuntimeException ignored) {
      // closing a failed producer: nothing more to do
    }
  }
}
