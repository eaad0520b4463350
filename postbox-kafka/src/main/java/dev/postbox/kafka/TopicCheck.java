package dev.postbox.kafka;

import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.LeaderNotAvailableException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks the cluster why a send failed: after the producer's metadata wait for a topic ran out,
 * whether the topic is missing (or refused) or the cluster could not be reached (the first is the
 * topic's failure, which the relay holds; the second is transient and retried); after a record
 * expired, whether its partition had no leader or too few in-sync replicas. Uses an admin client on
 * the producer's connection settings, created on first use.
 */
final class TopicCheck implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(TopicCheck.class);

  /**
   * At most this long per question about an expired record's partition: the relay waits for the
   * answer before its next attempt, and an unreachable cluster must not add the metadata wait.
   */
  private static final Duration DIAGNOSIS_TIMEOUT = Duration.ofSeconds(5);

  private final Map<String, Object> adminConfig = new HashMap<>();
  private final Duration timeout;
  private final Object lock = new Object();
  private Admin admin; // guarded by lock
  private boolean closed; // guarded by lock

  TopicCheck(Map<String, Object> producerConfig, Duration timeout) {
    for (Map.Entry<String, Object> e : producerConfig.entrySet()) {
      if (AdminClientConfig.configNames().contains(e.getKey())) {
        adminConfig.put(e.getKey(), e.getValue());
      }
    }
    adminConfig.put(AdminClientConfig.CLIENT_ID_CONFIG, "postbox-relay-topic-check");
    this.timeout = timeout;
  }

  /** Classifies the metadata timeout {@code waited} of a send to {@code topic}. */
  PublishOutcome.Failed classify(String topic, Throwable waited) {
    Admin a = admin();
    if (a == null) {
      return new PublishOutcome.Failed(waited, false);
    }
    try {
      a.describeTopics(
              List.of(topic), new DescribeTopicsOptions().timeoutMs((int) timeout.toMillis()))
          .allTopicNames()
          .get(timeout.toMillis() + 1_000, TimeUnit.MILLISECONDS);
      return new PublishOutcome.Failed(waited, false); // it exists: the cluster was slow
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        return new PublishOutcome.Failed(
            new UnknownTopicOrPartitionException(
                "topic '"
                    + topic
                    + "' does not exist (no metadata after "
                    + timeout.toMillis()
                    + " ms; the broker says it is unknown)"),
            false,
            true);
      }
      if (e.getCause() instanceof TopicAuthorizationException refused) {
        return new PublishOutcome.Failed(refused, false, true);
      }
      log.debug("checking topic {} failed: {}", topic, e.getCause().toString());
      return new PublishOutcome.Failed(waited, false);
    } catch (java.util.concurrent.TimeoutException e) {
      return new PublishOutcome.Failed(waited, false);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new PublishOutcome.Failed(waited, false);
    }
  }

  /**
   * Why partitions of {@code topic} may not take {@code acks=all} writes, asked of the cluster in
   * one round (the topic's description and its {@code min.insync.replicas}): for each of {@code
   * partitions} without a leader or with fewer in-sync replicas than the minimum, the cause. Empty
   * when the cluster cannot tell within {@link #DIAGNOSIS_TIMEOUT}; an empty map when every one of
   * them looks writable.
   */
  Optional<Map<Integer, RuntimeException>> whyNotWritable(String topic, Set<Integer> partitions) {
    Admin a = admin();
    if (a == null) {
      return Optional.empty();
    }
    long ms = Math.min(timeout.toMillis(), DIAGNOSIS_TIMEOUT.toMillis());
    try {
      TopicDescription d =
          a.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs((int) ms))
              .allTopicNames()
              .get(ms + 1_000, TimeUnit.MILLISECONDS)
              .get(topic);
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      ConfigEntry min =
          a.describeConfigs(List.of(resource), new DescribeConfigsOptions().timeoutMs((int) ms))
              .all()
              .get(ms + 1_000, TimeUnit.MILLISECONDS)
              .get(resource)
              .get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
      int minIsr = min == null ? 1 : Integer.parseInt(min.value());
      Map<Integer, RuntimeException> why = new HashMap<>();
      for (TopicPartitionInfo info : d.partitions()) {
        if (partitions.contains(info.partition())) {
          cause(topic + "-" + info.partition(), info, minIsr)
              .ifPresent(e -> why.put(info.partition(), e));
        }
      }
      return Optional.of(why);
    } catch (ExecutionException | java.util.concurrent.TimeoutException | RuntimeException e) {
      log.debug("describing {} failed: {}", topic, e.toString());
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private static Optional<RuntimeException> cause(
      String name, TopicPartitionInfo info, int minIsr) {
    if (info.leader() == null) {
      return Optional.of(
          new LeaderNotAvailableException(
              "partition " + name + " has no leader (replicas " + ids(info.replicas()) + ")"));
    }
    if (info.isr().size() < minIsr) {
      return Optional.of(
          new NotEnoughReplicasException(
              "partition "
                  + name
                  + " has "
                  + info.isr().size()
                  + " in-sync replica(s) "
                  + ids(info.isr())
                  + " of "
                  + info.replicas().size()
                  + ", below min.insync.replicas="
                  + minIsr
                  + ": the brokers refuse acks=all writes (NOT_ENOUGH_REPLICAS) until a replica"
                  + " catches up"));
    }
    return Optional.empty();
  }

  private static List<Integer> ids(List<Node> nodes) {
    return nodes.stream().map(Node::id).toList();
  }

  private Admin admin() {
    synchronized (lock) {
      if (admin == null && !closed) {
        admin = Admin.create(adminConfig);
      }
      return admin;
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      if (admin != null) {
        admin.close(Duration.ofSeconds(5));
        admin = null;
      }
    }
  }
}
