package dev.postbox.kafka;

import dev.postbox.core.Backoff;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.KafkaCluster;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import javax.sql.DataSource;

/**
 * Fixture of the tests on a three-broker cluster: unique topics on the cluster, and one polling
 * relay (acks=all, idempotent) whose listener counts what was acknowledged and keeps every failure,
 * so that a test can act at an exact point of the stream (after the n-th acknowledged row) instead
 * of after a sleep.
 */
final class ClusterRelays {

  private static final SecureRandom RANDOM = new SecureRandom();

  private ClusterRelays() {}

  /** Creates a topic (replication factor 3, all replicas in sync) with a unique name. */
  static String topic(KafkaCluster cluster, String base, int partitions) {
    String topic = base + "-" + Long.toString(RANDOM.nextLong() >>> 1, 36);
    cluster.createTopic(topic, partitions);
    return topic;
  }

  /** What the relay's listener saw. */
  static final class Seen implements RelayListener {
    final AtomicLong acknowledged = new AtomicLong();
    final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
    private final long at;
    private final LongConsumer action;
    private boolean fired;

    /** Runs {@code action} on the relay's thread once, when {@code at} rows were acknowledged. */
    Seen(long at, LongConsumer action) {
      this.at = at;
      this.action = action;
    }

    @Override
    public synchronized void onPublished(List<OutboxRecord> records) {
      long n = acknowledged.addAndGet(records.size());
      if (!fired && n >= at) {
        fired = true;
        action.accept(n);
      }
    }

    @Override
    public void onPublishFailed(OutboxRecord record, Throwable error, boolean permanent) {
      failures.add(error);
    }
  }

  /**
   * A started relay on the cluster: batches of 100, one instance holding its lanes through the
   * faults (a lease of 60 s), the given delivery timeout.
   */
  static Relay start(
      DataSource ds, KafkaCluster cluster, Duration deliveryTimeout, RelayListener listener) {
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ds),
                KafkaRelayPublisher.builder(cluster.bootstrapServers())
                    .deliveryTimeout(deliveryTimeout)
                    .build())
            .batchSize(100)
            .leaseTtl(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(200))
            .backoff(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2, 0.5))
            .listener(listener)
            .build();
    relay.start();
    return relay;
  }
}
