package dev.postbox.testkit.internal;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeMetadataQuorumOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** An admin client for one cluster, created on first use. Thread-safe. */
public final class TopicAdmin implements AutoCloseable {

  private static final Duration TOPIC_TIMEOUT = Duration.ofSeconds(60);
  private static final long POLL_MILLIS = 20;

  private final String bootstrapServers;
  private Admin admin;
  private boolean closed;

  public TopicAdmin(String bootstrapServers) {
    this.bootstrapServers = bootstrapServers;
  }

  /** Whether {@code describeCluster} answers within {@code timeout}. */
  public boolean clusterAnswers(Duration timeout) {
    try {
      admin()
          .describeCluster(new DescribeClusterOptions().timeoutMs((int) timeout.toMillis()))
          .clusterId()
          .get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      return true;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Creates a topic with replication factor 1 and waits until all partitions have a leader. */
  public void createTopic(String name, int partitions, Map<String, String> config) {
    createTopic(name, partitions, 1, config);
  }

  /**
   * Creates a topic with the given replication factor and waits until all partitions have a leader.
   */
  public void createTopic(
      String name, int partitions, int replication, Map<String, String> config) {
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be >= 1, was " + partitions);
    }
    NewTopic topic = new NewTopic(name, partitions, (short) replication).configs(config);
    get(admin().createTopics(List.of(topic)).all(), "create topic " + name);
    long deadline = System.nanoTime() + TOPIC_TIMEOUT.toNanos();
    while (true) {
      try {
        TopicDescription d =
            admin()
                .describeTopics(List.of(name))
                .allTopicNames()
                .get(10, TimeUnit.SECONDS)
                .get(name);
        if (d != null
            && d.partitions().size() == partitions
            && d.partitions().stream().allMatch(TopicAdmin::hasLeader)) {
          return;
        }
      } catch (ExecutionException | TimeoutException e) {
        // Not visible yet (UnknownTopicOrPartition) or slow: try again.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while creating topic " + name, e);
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new IllegalStateException(
            "topic " + name + " has no leader for every partition after " + TOPIC_TIMEOUT);
      }
      sleep();
    }
  }

  /** The ids of the brokers registered and not fenced, or empty if the cluster did not answer. */
  public Optional<Set<Integer>> liveBrokers(Duration timeout) {
    try {
      Collection<Node> nodes =
          admin()
              .describeCluster(new DescribeClusterOptions().timeoutMs((int) timeout.toMillis()))
              .nodes()
              .get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      Set<Integer> ids = new TreeSet<>();
      nodes.forEach(n -> ids.add(n.id()));
      return Optional.of(ids);
    } catch (ExecutionException | TimeoutException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Whether the controller quorum has a leader, as {@code describeMetadataQuorum} says. */
  public boolean quorumHasLeader(Duration timeout) {
    try {
      QuorumInfo q =
          admin()
              .describeMetadataQuorum(
                  new DescribeMetadataQuorumOptions().timeoutMs((int) timeout.toMillis()))
              .quorumInfo()
              .get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      return q.leaderId() >= 0;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /**
   * One partition's description as the cluster sees it now. On a cluster the admin asks the least
   * loaded broker, and a broker that has not applied the topic's creation yet answers {@code
   * UnknownTopicOrPartition} (the creation waited for one broker to show every leader, not all):
   * that answer is asked again, up to the topic timeout.
   */
  public TopicPartitionInfo partition(String topic, int partition) {
    long deadline = System.nanoTime() + TOPIC_TIMEOUT.toNanos();
    TopicDescription d;
    while (true) {
      try {
        d =
            get(admin().describeTopics(List.of(topic)).allTopicNames(), "describe topic " + topic)
                .get(topic);
        break;
      } catch (UnknownTopicOrPartitionException notYet) {
        if (System.nanoTime() - deadline >= 0) {
          throw notYet;
        }
        sleep();
      }
    }
    return d.partitions().stream()
        .filter(p -> p.partition() == partition)
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no partition " + topic + "-" + partition));
  }

  /** The id of the broker that coordinates the consumer group {@code groupId}. */
  public int groupCoordinator(String groupId) {
    ConsumerGroupDescription d =
        get(
                admin().describeConsumerGroups(List.of(groupId)).all(),
                "describe consumer group " + groupId)
            .get(groupId);
    return d.coordinator().id();
  }

  private static boolean hasLeader(TopicPartitionInfo p) {
    return p.leader() != null && !p.leader().isEmpty();
  }

  private static <T> T get(KafkaFuture<T> future, String what) {
    try {
      return future.get(TOPIC_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException("cannot " + what, e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException("cannot " + what + " within " + TOPIC_TIMEOUT, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted: " + what, e);
    }
  }

  private static void sleep() {
    try {
      Thread.sleep(POLL_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private synchronized Admin admin() {
    if (closed) {
      throw new IllegalStateException("closed");
    }
    if (admin == null) {
      Properties p = new Properties();
      p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
      p.put(AdminClientConfig.CLIENT_ID_CONFIG, "postbox-testkit-admin");
      p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
      p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
      p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
      p.put(AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "200");
      admin = Admin.create(p);
    }
    return admin;
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (admin != null) {
      admin.close(Duration.ofSeconds(5));
      admin = null;
    }
  }
}
