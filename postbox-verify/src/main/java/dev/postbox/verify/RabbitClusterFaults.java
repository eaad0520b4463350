package dev.postbox.verify;

import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.RabbitCluster;
import java.nio.file.Path;
import java.util.OptionalInt;
import java.util.SplittableRandom;

/**
 * The RabbitMQ campaign on a three-node cluster ({@code --cluster}): starts the test kit's {@link
 * RabbitCluster} and injects its fault, {@code kill -9} of the node holding the quorum leader of a
 * shard queue picked at random, started again after two seconds (it rejoins; the queue's other
 * members elected a new leader meanwhile). Not thread-safe.
 */
final class RabbitClusterFaults {

  /** The fault's name in the fault log and the scenario's, after {@link RabbitCampaign#PREFIX}. */
  static final String NODE_KILL = "cluster-node-kill";

  private RabbitClusterFaults() {}

  /** A started three-node cluster from {@code script}. */
  static RabbitCluster start(Path script) {
    RabbitCluster cluster = RabbitCluster.Builder.of(script).build();
    try {
      cluster.start();
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  /**
   * Kills the node holding the leader of a random shard queue of {@code subscription} on {@code
   * topic} ({@code shards} of them; a random node if no leader is known), waits two seconds and
   * starts it again; returns 1 (it fired).
   */
  static int killLeaderNode(
      RabbitCluster cluster,
      String subscription,
      String topic,
      int shards,
      SplittableRandom random,
      FaultLog log) {
    String queue = RabbitTopology.queue(subscription, topic, random.nextInt(shards));
    OptionalInt leader = cluster.leaderOf(queue);
    int node = leader.orElse(random.nextInt(cluster.size()));
    cluster.kill(node);
    log.fired(
        NODE_KILL,
        cluster.nodeName(node),
        "SIGKILL"
            + (leader.isPresent() ? " of the leader of " + queue : " (no leader known)")
            + ", started again after 2 s");
    Campaign.sleep(2_000);
    cluster.start(node);
    return 1;
  }
}
