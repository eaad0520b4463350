package dev.postbox.kafka.internal;

import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.kafka.KafkaSubscriber;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;

/**
 * The Kafka consumer properties of a subscriber: Postbox's defaults, the two it fixes, and those
 * derived from the subscription.
 *
 * <p>Defaults: {@code isolation.level=read_committed}, {@code auto.offset.reset=earliest},
 * cooperative-sticky assignment, {@code client.id=postbox-<subscription>}; fixed: {@code group.id}
 * = the subscription's name, auto-commit off; derived: {@code max.poll.interval.ms} = the shutdown
 * timeout + {@link #POLL_INTERVAL_MARGIN}, and for a batch size above 1 {@code max.poll.records}
 * ({@link #maxPollRecords}: one batch, or five in key order; at most Kafka's 500). A property the
 * user set wins over a default or a derived value. Stateless.
 */
public final class ConsumerSettings {

  /**
   * The longest a synchronous commit (at revocation, at close) holds the poll thread; a commit that
   * does not finish in time only means its records are delivered again (and absorbed by the inbox).
   */
  public static final Duration SYNC_COMMIT_TIMEOUT = Duration.ofSeconds(10);

  /**
   * Added to the shutdown timeout for the default {@code max.poll.interval.ms}: the poll thread
   * never runs handlers, it blocks only while a revocation waits for running records (at most the
   * shutdown timeout) and commits (at most {@link #SYNC_COMMIT_TIMEOUT}).
   */
  public static final Duration POLL_INTERVAL_MARGIN = Duration.ofSeconds(30);

  /**
   * Batches a key-ordered batch subscription's poll holds at most (see {@link #maxPollRecords}).
   */
  public static final int KEY_BATCHES_PER_POLL = 5;

  private ConsumerSettings() {}

  /** The properties a builder starts from, before the user's own. */
  public static Map<String, Object> defaults(String bootstrapServers, String subscriptionName) {
    Map<String, Object> config = new HashMap<>();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    config.putAll(KafkaSubscriber.DEFAULT_CONSUMER_PROPERTIES);
    config.put(ConsumerConfig.CLIENT_ID_CONFIG, "postbox-" + subscriptionName);
    return config;
  }

  /**
   * Refuses the properties Postbox fixes ({@code group.id}, {@code enable.auto.commit}).
   *
   * @throws IllegalArgumentException for a fixed property
   */
  public static void checkSettable(String name) {
    if (name.equals(ConsumerConfig.GROUP_ID_CONFIG)
        || name.equals(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG)) {
      throw new IllegalArgumentException(
          name + " is fixed (group.id = subscription name; offsets are committed by Postbox)");
    }
  }

  /**
   * The derived {@code max.poll.records} of a batch subscription (batch size above 1): in partition
   * order (or unordered, which batches in partition order too) about one batch, so that the
   * per-partition pauses can take turns; in key order up to {@link #KEY_BATCHES_PER_POLL} batches,
   * which a partition's keys split into batches that run side by side. At most Kafka's default and
   * the in-flight limit.
   */
  static int maxPollRecords(Subscription subscription) {
    int batches = subscription.ordering() == Ordering.KEY ? KEY_BATCHES_PER_POLL : 1;
    long records = Math.min((long) batches * subscription.batchSize(), subscription.maxInFlight());
    return (int) Math.min(ConsumerConfig.DEFAULT_MAX_POLL_RECORDS, records);
  }

  /** The consumer's properties: {@code configured} with the fixed and derived ones applied. */
  public static Map<String, Object> forSubscription(
      Map<String, Object> configured, Subscription subscription) {
    Map<String, Object> c = new HashMap<>(configured);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, subscription.name());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    if ("consumer".equalsIgnoreCase(String.valueOf(c.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG)))
        && CooperativeStickyAssignor.class
            .getName()
            .equals(c.get(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG))) {
      // KIP-848: the broker assigns; Kafka refuses a client-side assignor with this protocol
      c.remove(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG);
    }
    if (subscription.batchSize() > 1) {
      c.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords(subscription));
    }
    // Kafka's default (5 min) is for poll loops that run handlers. Ours does not, and this value is
    // also the group's rebalance timeout: how long a rebalance waits for members that never rejoin.
    // After a broker restart with members dying mid-rebalance, a group was seen waiting in
    // PreparingRebalance for over 4 minutes with every live consumer unassigned (issue 13 #7).
    c.putIfAbsent(
        ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
        (int)
            Math.min(
                Integer.MAX_VALUE,
                subscription.shutdownTimeout().plus(POLL_INTERVAL_MARGIN).toMillis()));
    return c;
  }
}
