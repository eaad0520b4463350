package dev.postbox.verify;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.RabbitCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The RabbitMQ campaign on a three-node cluster ({@code --cluster}): starts the test kit's {@link
 * RabbitCluster} and injects its faults, each written to the fault log with the node, what happened
 * and how long the cluster took to have the node back:
 *
 * <ul>
 *   <li>{@value #NODE_KILL}: {@code kill -9} of the node holding the quorum leader of a shard queue
 *       picked at random, started again after two seconds (it rejoins; the queue's other members
 *       elected a new leader meanwhile);
 *   <li>{@value #ROLLING_RESTART}: each node in turn stopped cleanly ({@code SIGTERM}, as an
 *       operator's rolling upgrade does) and started again, the next one only once the node is back
 *       in the cluster and every shard queue has all its members online again (one fault per node
 *       restarted; if the cluster is not whole within {@link #WHOLE_WAIT}, the fault is logged as
 *       not fired with why);
 *   <li>{@value #NODE_CUT_OFF}: the node holding the quorum leader of a random shard queue cut off
 *       from the other two (each node runs in its own network namespace; packets between it and
 *       them dropped both ways) for {@value #CUT_MS} ms while the relays and consumers still reach
 *       it. With {@code pause_minority} the node, seeing fewer than half of the cluster once
 *       Erlang's net tick (5 s) has passed, pauses: it closes its clients' connections and refuses
 *       new ones, and its clients reconnect to the other nodes, whose queue members elect another
 *       leader. Then it is reconnected, and the fault logged once it runs in the cluster again and
 *       every shard queue has all its members online.
 * </ul>
 *
 * Not thread-safe.
 */
final class RabbitClusterFaults {

  /** The fault's name in the fault log and the scenario's, after {@link RabbitCampaign#PREFIX}. */
  static final String NODE_KILL = "cluster-node-kill";

  /** The rolling restart's name in the fault log and the scenario's. */
  static final String ROLLING_RESTART = "cluster-rolling-restart";

  /** The cut-off's name in the fault log and the scenario's. */
  static final String NODE_CUT_OFF = "cluster-node-cut-off";

  /**
   * How long a node stays cut off: past Erlang's net tick (5 s with own networks, so the others
   * take it as down after 3.75 to 6.25 s) and the quorum queues' leader election, so that it pauses
   * and another member leads.
   */
  static final long CUT_MS = 10_000;

  /**
   * How long a rolling restart waits, before it stops a node and after it started one, for every
   * node to run in the cluster and every shard queue to have all its members online.
   */
  static final Duration WHOLE_WAIT = Duration.ofSeconds(90);

  private static final long POLL_MS = 500;

  private RabbitClusterFaults() {}

  /**
   * A started three-node cluster from {@code script}; {@code ownNetworks}: each node in its own
   * network namespace, so that one can be cut off.
   */
  static RabbitCluster start(Path script, boolean ownNetworks) {
    RabbitCluster cluster = RabbitCluster.Builder.of(script).ownNetworks(ownNetworks).build();
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

  /**
   * Stops each node of {@code cluster} in turn cleanly and starts it again, each only once the
   * cluster is whole (every node running in it, every one of the {@code shards} shard queues of
   * {@code subscription} on {@code topic} with all its members online); returns how many nodes were
   * restarted (each a fault fired).
   */
  static int rollingRestart(
      RabbitCluster cluster, String subscription, String topic, int shards, FaultLog log) {
    List<String> queues = shardQueues(subscription, topic, shards);
    int fired = 0;
    for (int node = 0; node < cluster.size(); node++) {
      String name = cluster.nodeName(node);
      if (!awaitTrue(() -> whole(cluster, queues))) {
        log.notFired(
            ROLLING_RESTART,
            name,
            "the cluster was not whole (every node running in it, every shard queue's members"
                + " online) within "
                + WHOLE_WAIT.toSeconds()
                + " s: "
                + state(cluster, queues));
        return fired;
      }
      long t0 = System.nanoTime();
      cluster.stop(node);
      long stopped = millisSince(t0);
      try {
        cluster.start(node); // returns once the node runs in the cluster again
      } catch (RuntimeException e) {
        log.fired(
            ROLLING_RESTART,
            name,
            "SIGTERM (clean stop, " + stopped + " ms); start failed: " + e.getMessage());
        return fired + 1;
      }
      long back = millisSince(t0);
      boolean online = awaitTrue(() -> whole(cluster, queues));
      fired++;
      log.fired(
          ROLLING_RESTART,
          name,
          "SIGTERM (clean stop, "
              + stopped
              + " ms), started again, back in the cluster after "
              + back
              + " ms; "
              + (online
                  ? "every shard queue's members online after " + millisSince(t0) + " ms"
                  : "not every shard queue's members online within "
                      + WHOLE_WAIT.toSeconds()
                      + " s: "
                      + state(cluster, queues)));
    }
    return fired;
  }

  /**
   * Cuts the node holding the leader of a random one of the {@code shards} shard queues of {@code
   * subscription} on {@code topic} off from the other nodes for {@link #CUT_MS} (a random node if
   * no leader is known), then reconnects it and waits until the cluster is whole again; returns 1
   * (it fired), or 0 (logged as not fired) if the cluster was not whole before.
   */
  static int cutOffLeaderNode(
      RabbitCluster cluster,
      String subscription,
      String topic,
      int shards,
      SplittableRandom random,
      FaultLog log) {
    List<String> queues = shardQueues(subscription, topic, shards);
    String queue = queues.get(random.nextInt(shards));
    if (!awaitTrue(() -> whole(cluster, queues))) {
      log.notFired(
          NODE_CUT_OFF,
          queue,
          "the cluster was not whole within "
              + WHOLE_WAIT.toSeconds()
              + " s: "
              + state(cluster, queues));
      return 0;
    }
    OptionalInt leader = cluster.leaderOf(queue);
    int node = leader.orElse(random.nextInt(cluster.size()));
    long t0 = System.nanoTime();
    cluster.cutOff(node);
    StringBuilder detail =
        new StringBuilder(
            (leader.isPresent() ? "the leader of " + queue : "a node (no leader known)")
                + " cut off from the other nodes (clients still reach it)");
    try {
      boolean paused = awaitTrue(() -> !acceptsClients(cluster, node));
      detail.append(
          paused
              ? "; it paused (refuses clients) after " + millisSince(t0) + " ms"
              : "; it did not pause within " + WHOLE_WAIT.toSeconds() + " s");
      int[] now = {-1};
      boolean moved =
          awaitTrue(() -> {
            now[0] = cluster.leaderOf(queue).orElse(-1);
            return now[0] >= 0 && now[0] != node;
          });
      detail.append(
          moved
              ? "; " + cluster.nodeName(now[0]) + " leads it after " + millisSince(t0) + " ms"
              : "; no other leader within " + WHOLE_WAIT.toSeconds() + " s");
      boolean left = awaitTrue(() -> !cluster.runningNodes().contains(node));
      detail.append(
          left
              ? "; the others see it down after " + millisSince(t0) + " ms"
              : "; the others still see it within " + WHOLE_WAIT.toSeconds() + " s");
      Campaign.sleep(Math.max(0, CUT_MS - millisSince(t0)));
    } finally {
      cluster.reconnect(node);
    }
    long cut = millisSince(t0);
    long reconnected = System.nanoTime();
    boolean back = awaitTrue(() -> whole(cluster, queues));
    detail
        .append("; reconnected after ")
        .append(cut)
        .append(" ms, ")
        .append(
            back
                ? "back in the cluster with every shard queue's members online after "
                    + millisSince(reconnected)
                    + " ms"
                : "not whole within "
                    + WHOLE_WAIT.toSeconds()
                    + " s (the heal waits): "
                    + state(cluster, queues));
    log.fired(NODE_CUT_OFF, cluster.nodeName(node), detail.toString());
    return 1;
  }

  /**
   * Whether node {@code node} lets a client open a connection (a paused node refuses them). The
   * same handshake a relay or consumer makes, with no automatic recovery.
   */
  static boolean acceptsClients(RabbitCluster cluster, int node) {
    ConnectionFactory f = new ConnectionFactory();
    try {
      f.setUri(cluster.uri());
      f.setAutomaticRecoveryEnabled(false);
      f.setConnectionTimeout(5_000);
      f.setHandshakeTimeout(5_000);
      try (Connection c =
          f.newConnection(List.of(Address.parseAddress(cluster.address(node))), "verify-probe")) {
        return c.isOpen();
      }
    } catch (Exception e) {
      return false;
    }
  }

  /** Whether every node runs in the cluster and every queue has all its members online. */
  static boolean whole(RabbitCluster cluster, List<String> queues) {
    Set<Integer> all = new HashSet<>();
    for (int i = 0; i < cluster.size(); i++) {
      all.add(i);
    }
    if (!cluster.runningNodes().equals(all)) {
      return false;
    }
    for (String q : queues) {
      Set<Integer> members = cluster.membersOf(q);
      if (members.isEmpty() || !cluster.onlineMembersOf(q).containsAll(members)) {
        return false;
      }
    }
    return true;
  }

  /** What the cluster says of its nodes and the queues' members, for a fault not fired. */
  static String state(RabbitCluster cluster, List<String> queues) {
    StringBuilder b = new StringBuilder("running " + cluster.runningNodes());
    for (String q : queues) {
      b.append(", ")
          .append(q)
          .append(" members ")
          .append(cluster.membersOf(q))
          .append(" online ")
          .append(cluster.onlineMembersOf(q));
    }
    return b.toString();
  }

  /** The {@code shards} shard queues of {@code subscription} on {@code topic}. */
  private static List<String> shardQueues(String subscription, String topic, int shards) {
    List<String> queues = new ArrayList<>();
    for (int s = 0; s < shards; s++) {
      queues.add(RabbitTopology.queue(subscription, topic, s));
    }
    return queues;
  }

  /** Polls {@code condition} until true (true) or {@link #WHOLE_WAIT} passed (false). */
  static boolean awaitTrue(java.util.function.BooleanSupplier condition) {
    return FaultWaits.until(WHOLE_WAIT, POLL_MS, condition);
  }

  static long millisSince(long t0) {
    return FaultWaits.millisSince(t0);
  }
}
