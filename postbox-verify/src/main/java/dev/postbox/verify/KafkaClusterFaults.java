package dev.postbox.verify;

import dev.postbox.testkit.KafkaCluster;
import dev.postbox.verify.Scenario.Fault;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeMetadataQuorumOptions;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Kafka campaign on a three-broker cluster ({@code --cluster}): starts the test kit's {@link
 * KafkaCluster} (three KRaft nodes in combined mode, each broker and controller; replication factor
 * 3, {@code min.insync.replicas=2}, no unclean leader election) and injects its faults, one broker
 * at a time, each written to the fault log with the broker, what happened and how long the cluster
 * took to move on and to have the broker back:
 *
 * <ul>
 *   <li>{@link Fault#CLUSTER_LEADER_KILL}: {@code kill -9} of the broker leading a random partition
 *       of the campaign's topic, started again {@value #DOWN_MS} ms later;
 *   <li>{@link Fault#CLUSTER_LEADER_FREEZE}: {@code SIGSTOP} of that leader for {@value #FREEZE_MS}
 *       ms (twice the brokers' 3 s session timeout, so the controller fences it and another replica
 *       leads), then {@code SIGCONT};
 *   <li>{@link Fault#CLUSTER_CONTROLLER_KILL}: {@code kill -9} of the active controller (the
 *       quorum's leader, also a broker), started again {@value #DOWN_MS} ms later;
 *   <li>{@link Fault#CLUSTER_ROLLING_RESTART}: each broker in turn stopped with {@code SIGTERM}
 *       (controlled shutdown) and started again, the next one only once every partition of the
 *       topic has all three replicas in sync again (one fault per broker restarted);
 *   <li>{@link Fault#CLUSTER_ISR_BELOW_MIN}: the topic's {@code min.insync.replicas} raised to 3
 *       and a random broker killed with {@code kill -9}, so every partition's in-sync replicas (2)
 *       are below the minimum and the brokers refuse the relays' {@code acks=all} writes ({@code
 *       NOT_ENOUGH_REPLICAS}) for {@value #BELOW_MIN_MS} ms; then the broker started again, every
 *       replica back in sync, and the topic's override removed (the cluster's minimum, 2, again).
 *       Raising the minimum is how three combined KRaft nodes get there: two brokers down would
 *       also take the controller quorum's majority;
 *   <li>{@link Fault#CLUSTER_BROKER_CUT_OFF}: a broker cut off from the other two nodes (brokers
 *       and controllers; each broker runs in its own network namespace) for {@value #CUT_MS} ms,
 *       while the relays and consumers still reach it: it can neither replicate nor heartbeat, is
 *       fenced, and other brokers lead its partitions and coordinate its groups. Every other time
 *       (the first included) it is the broker coordinating the consumers' group, else the leader of
 *       a random partition. Then reconnected, and the fault logged once every replica is in sync
 *       again.
 * </ul>
 *
 * Not thread-safe: one injector thread per fault kind, and a scenario injects one kind.
 */
final class KafkaClusterFaults {

  /** How long a killed broker stays down before it is started again. */
  static final long DOWN_MS = 4_000;

  /** How long a frozen broker stays frozen: twice the test kit's broker session timeout (3 s). */
  static final long FREEZE_MS = 6_000;

  /**
   * How long the three brokers (and a restarted one) may take to start and register: three JVMs
   * starting at once on a 2-core machine at load average 58 had not all registered after 3 minutes
   * (each JVM logged its first line only 66 s after its launch).
   */
  static final Duration STARTUP_TIMEOUT = Duration.ofMinutes(6);

  /**
   * How long a broker stays cut off from the other brokers: past its session timeout (3 s), so that
   * it is fenced and other brokers lead its partitions, and past the time the other brokers' new
   * group coordinator takes to hand a partition on (the broker's fencing, a member's commit timing
   * out on the old coordinator, then the consumers' 6 s session timeout for the members it does not
   * hear from: 17 s in a campaign run), so that two coordinators overlap for a while; and past the
   * producers' 30 s request timeout, so that a relay's write waiting on a cut-off leader is
   * answered {@code REQUEST_TIMED_OUT} while the leader is still cut off, and the relay must find
   * the new leader itself (Kafka's producer asks for no new metadata on that error).
   */
  static final long CUT_MS = 45_000;

  /** How long every partition's in-sync replicas stay below the minimum. */
  static final long BELOW_MIN_MS = 6_000;

  /** Each broker JVM's heap: three of them beside the campaign's processes on two cores. */
  static final String BROKER_HEAP = "320m";

  // how long to wait for a new leader, a new controller, a registration or a full ISR
  private static final Duration MOVE_WAIT = Duration.ofSeconds(60);
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(5);
  private static final long POLL_MS = 100;

  private final CampaignEnvironment env;
  private final FaultLog log;
  private int cutOffs; // cut-offs injected so far: even ones cut the group's coordinator off

  KafkaClusterFaults(CampaignEnvironment env, FaultLog log) {
    this.env = env;
    this.log = log;
  }

  /**
   * A started three-broker cluster with its data and broker logs under {@code dir}; {@code
   * ownNetworks}: each broker in its own network namespace, so that one can be cut off.
   */
  static KafkaCluster start(Path dir, boolean ownNetworks) {
    KafkaCluster cluster =
        KafkaCluster.builder()
            .ownNetworks(ownNetworks)
            .dataDirectory(dir)
            .maxHeap(BROKER_HEAP)
            .startupTimeout(STARTUP_TIMEOUT)
            .build();
    try {
      cluster.start();
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  /** Injects {@code f}, one of {@link Scenario#CLUSTER_FAULTS}. */
  void inject(Fault f, SplittableRandom r) {
    switch (f) {
      case CLUSTER_LEADER_KILL -> killLeader(f, r);
      case CLUSTER_LEADER_FREEZE -> freezeLeader(f, r);
      case CLUSTER_CONTROLLER_KILL -> killController(f);
      case CLUSTER_ROLLING_RESTART -> rollingRestart(f);
      case CLUSTER_ISR_BELOW_MIN -> isrBelowMin(f, r);
      case CLUSTER_BROKER_CUT_OFF -> cutOff(f, r);
      default -> throw new IllegalArgumentException("not a cluster fault: " + f);
    }
  }

  /** A partition of the campaign topic and the broker leading it. */
  private record Led(int partition, String tp, int node) {}

  /**
   * A random partition of the campaign topic and its leader; empty (the fault logged as not fired)
   * when the partition has no leader now.
   */
  private java.util.Optional<Led> randomLedPartition(Fault f, SplittableRandom r) {
    int partition = r.nextInt(Campaign.PARTITIONS);
    String tp = env.topic() + "-" + partition;
    OptionalInt leader = env.cluster().leaderOf(env.topic(), partition);
    if (leader.isEmpty()) {
      log.notFired(f.kind, tp, "the partition has no leader now");
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(new Led(partition, tp, leader.getAsInt()));
  }

  private void killLeader(Fault f, SplittableRandom r) {
    java.util.Optional<Led> led = randomLedPartition(f, r);
    if (led.isEmpty()) {
      return;
    }
    int partition = led.get().partition();
    int node = led.get().node();
    long t0 = System.nanoTime();
    env.cluster().kill(node);
    String moved = awaitNewLeader(partition, node, t0);
    Campaign.sleep(Math.max(0, DOWN_MS - millisSince(t0)));
    String detail = "kill -9 of the leader of " + led.get().tp() + "; " + moved;
    restart(f, node, detail, t0);
  }

  private void freezeLeader(Fault f, SplittableRandom r) {
    java.util.Optional<Led> led = randomLedPartition(f, r);
    if (led.isEmpty()) {
      return;
    }
    KafkaCluster cluster = env.cluster();
    int partition = led.get().partition();
    String tp = led.get().tp();
    int node = led.get().node();
    long t0 = System.nanoTime();
    cluster.freeze(node);
    String moved;
    try {
      moved = awaitNewLeader(partition, node, t0);
      Campaign.sleep(Math.max(0, FREEZE_MS - millisSince(t0)));
    } finally {
      cluster.thaw(node);
    }
    long thawed = System.nanoTime();
    boolean back = awaitTrue(() -> registered(node));
    log.fired(
        f.kind,
        broker(node),
        "SIGSTOP of the leader of "
            + tp
            + " for "
            + millisSince(t0)
            + " ms (session timeout 3000 ms); "
            + moved
            + "; SIGCONT, "
            + (back
                ? "registered again after " + millisSince(thawed) + " ms"
                : "not registered again within " + MOVE_WAIT.toSeconds() + " s (the heal waits)"));
  }

  /**
   * Cuts a broker off: every other time (starting with the first) the one coordinating the
   * consumers' group, whose members still reach it (the case where two coordinators can hand one
   * partition to two members), else the leader of a random partition.
   */
  private void cutOff(Fault f, SplittableRandom r) {
    KafkaCluster cluster = env.cluster();
    boolean coordinator = cutOffs++ % 2 == 0;
    int node;
    String what;
    IntSupplier successor;
    if (coordinator) {
      try {
        node = cluster.coordinatorOf(Campaign.GROUP);
      } catch (RuntimeException e) {
        log.notFired(f.kind, "coordinator", "the group's coordinator is not known now: " + e);
        return;
      }
      what = "the coordinator of the consumer group " + Campaign.GROUP;
      successor = () -> cluster.coordinatorOf(Campaign.GROUP);
    } else {
      java.util.Optional<Led> led = randomLedPartition(f, r);
      if (led.isEmpty()) {
        return;
      }
      node = led.get().node();
      what = "the leader of " + led.get().tp();
      int partition = led.get().partition();
      successor = () -> cluster.leaderOf(env.topic(), partition).orElse(-1);
    }
    long t0 = System.nanoTime();
    cluster.cutOff(node);
    long cut;
    String moved;
    try {
      moved =
          awaitOther(
              successor,
              node,
              t0,
              CUT_MS,
              coordinator ? "coordinates" : "leads",
              "no other broker seen in its place within "
                  + CUT_MS
                  + " ms (the other brokers' metadata still named it)");
      Campaign.sleep(Math.max(0, CUT_MS - millisSince(t0)));
    } finally {
      cut = millisSince(t0);
      cluster.reconnect(node);
    }
    long reconnected = System.nanoTime();
    long reconnecting = millisSince(t0) - cut;
    boolean inSync = awaitTrue(this::topicInSync);
    log.fired(
        f.kind,
        broker(node),
        what
            + " cut off from the other brokers and the controller quorum for "
            + cut
            + " ms (clients still reach it; session timeout 3000 ms); "
            + moved
            + "; reconnected in "
            + reconnecting
            + " ms, "
            + (inSync
                ? "every replica of the topic in sync after " + millisSince(reconnected) + " ms"
                : "replicas not in sync within " + MOVE_WAIT.toSeconds() + " s (the heal waits)"));
  }

  /**
   * Waits at most {@code boundMs} after {@code t0} until {@code now} names another broker than
   * {@code old}; says which ("broker-N {@code verb} after ... ms") and when, or {@code otherwise}.
   */
  private static String awaitOther(
      IntSupplier now, int old, long t0, long boundMs, String verb, String otherwise) {
    int[] seen = {-1};
    boolean moved =
        FaultWaits.until(
            Duration.ofMillis(Math.max(0, boundMs - millisSince(t0))),
            POLL_MS,
            () -> {
              seen[0] = now.getAsInt();
              return seen[0] >= 0 && seen[0] != old;
            });
    return moved
        ? "broker-" + seen[0] + " " + verb + " after " + millisSince(t0) + " ms"
        : otherwise;
  }

  private void killController(Fault f) {
    OptionalInt active = activeController();
    if (active.isEmpty()) {
      log.notFired(f.kind, "controller", "the controller quorum has no leader now");
      return;
    }
    int node = active.getAsInt();
    long t0 = System.nanoTime();
    env.cluster().kill(node);
    IntSupplier next = () -> activeController().orElse(-1);
    boolean elected = awaitTrue(() -> next.getAsInt() >= 0 && next.getAsInt() != node);
    String moved =
        elected
            ? "broker-" + next.getAsInt() + " active controller after " + millisSince(t0) + " ms"
            : "no other active controller within " + MOVE_WAIT.toSeconds() + " s";
    Campaign.sleep(Math.max(0, DOWN_MS - millisSince(t0)));
    restart(f, node, "kill -9 of the active controller (combined node); " + moved, t0);
  }

  private void rollingRestart(Fault f) {
    KafkaCluster cluster = env.cluster();
    for (int node = 0; node < cluster.size(); node++) {
      if (!awaitTrue(this::topicInSync)) {
        log.notFired(
            f.kind,
            broker(node),
            "the topic's replicas were not all in sync within " + MOVE_WAIT.toSeconds() + " s");
        return;
      }
      long t0 = System.nanoTime();
      cluster.stop(node);
      long stopped = millisSince(t0);
      try {
        cluster.start(node);
      } catch (RuntimeException e) {
        log.fired(
            f.kind,
            broker(node),
            "SIGTERM (controlled shutdown, " + stopped + " ms); start failed: " + e.getMessage());
        return;
      }
      long back = millisSince(t0);
      boolean inSync = awaitTrue(this::topicInSync);
      log.fired(
          f.kind,
          broker(node),
          "SIGTERM (controlled shutdown, "
              + stopped
              + " ms), started again, registered after "
              + back
              + " ms; "
              + (inSync
                  ? "every replica of the topic in sync after " + millisSince(t0) + " ms"
                  : "replicas not in sync within " + MOVE_WAIT.toSeconds() + " s"));
    }
  }

  private void isrBelowMin(Fault f, SplittableRandom r) {
    KafkaCluster cluster = env.cluster();
    if (!awaitTrue(this::topicInSync)) {
      log.notFired(
          f.kind,
          env.topic(),
          "the topic's replicas were not all in sync within " + MOVE_WAIT.toSeconds() + " s");
      return;
    }
    int node = r.nextInt(cluster.size());
    if (!awaitTrue(() -> setMinInsync(Optional.of(cluster.size())))) {
      log.notFired(f.kind, env.topic(), "min.insync.replicas could not be raised");
      return;
    }
    long t0 = System.nanoTime();
    StringBuilder detail =
        new StringBuilder("min.insync.replicas " + cluster.size() + " on " + env.topic());
    try {
      cluster.kill(node);
      detail.append(", kill -9 of broker-").append(node).append(": ");
      if (awaitTrue(() -> isrWithout(node))) {
        long below = System.nanoTime();
        detail.append("every partition's in-sync replicas 2 (below the minimum) after ");
        detail.append(millisSince(t0)).append(" ms");
        Campaign.sleep(BELOW_MIN_MS);
        detail.append(", for ").append(millisSince(below)).append(" ms");
      } else {
        detail.append("the in-sync replicas did not shrink within ");
        detail.append(MOVE_WAIT.toSeconds()).append(" s");
      }
      try {
        cluster.start(node);
        detail.append("; started again, ");
        detail.append(
            awaitTrue(this::topicInSync)
                ? "every replica in sync after " + millisSince(t0) + " ms"
                : "replicas not in sync within " + MOVE_WAIT.toSeconds() + " s");
      } catch (RuntimeException e) {
        detail.append("; start failed (the heal starts it): ").append(e.getMessage());
      }
    } finally {
      // the cluster's own minimum again, whatever happened above
      boolean restored = awaitTrue(() -> setMinInsync(Optional.empty()));
      detail.append(
          restored
              ? "; the topic's override removed (min.insync.replicas 2)"
              : "; the topic's min.insync.replicas override could NOT be removed");
    }
    log.fired(f.kind, broker(node), detail.toString());
  }

  /** Whether no partition of the topic counts {@code node} among its in-sync replicas. */
  private boolean isrWithout(int node) {
    for (int p = 0; p < Campaign.PARTITIONS; p++) {
      if (env.cluster().inSyncReplicas(env.topic(), p).contains(node)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Sets the topic's {@code min.insync.replicas} to {@code value}, or removes its override when
   * empty; false if the cluster did not confirm it in time.
   */
  private boolean setMinInsync(Optional<Integer> value) {
    ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, env.topic());
    AlterConfigOp op =
        value.isPresent()
            ? new AlterConfigOp(
                new ConfigEntry(MIN_INSYNC, value.get().toString()), AlterConfigOp.OpType.SET)
            : new AlterConfigOp(new ConfigEntry(MIN_INSYNC, ""), AlterConfigOp.OpType.DELETE);
    try {
      env.admin()
          .incrementalAlterConfigs(Map.of(topic, List.of(op)))
          .all()
          .get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (ExecutionException | TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static final String MIN_INSYNC = "min.insync.replicas";

  /** Starts {@code node} again and logs the fault as fired with how long it was down. */
  private void restart(Fault f, int node, String detail, long t0) {
    try {
      env.cluster().start(node);
    } catch (RuntimeException e) {
      log.fired(
          f.kind, broker(node), detail + "; start failed (the heal starts it): " + e.getMessage());
      return;
    }
    log.fired(
        f.kind, broker(node), detail + "; started again, back after " + millisSince(t0) + " ms");
  }

  /** Waits until another broker leads {@code partition}; says which and when. */
  private String awaitNewLeader(int partition, int old, long t0) {
    return awaitOther(
        () -> env.cluster().leaderOf(env.topic(), partition).orElse(-1),
        old,
        t0,
        MOVE_WAIT.toMillis(),
        "leads",
        "no other leader within " + MOVE_WAIT.toSeconds() + " s");
  }

  /** Whether every partition of the topic has all its replicas in sync. */
  private boolean topicInSync() {
    for (int p = 0; p < Campaign.PARTITIONS; p++) {
      if (env.cluster().inSyncReplicas(env.topic(), p).size() < Math.min(3, env.cluster().size())) {
        return false;
      }
    }
    return true;
  }

  /** Whether {@code node} is registered and unfenced, as the cluster says. */
  private boolean registered(int node) {
    try {
      return env
          .admin()
          .describeCluster()
          .nodes()
          .get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
          .stream()
          .anyMatch(n -> n.id() == node);
    } catch (ExecutionException | TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** The node id of the controller quorum's leader, or empty if none or no answer. */
  private OptionalInt activeController() {
    Admin admin = env.admin();
    try {
      int leader =
          admin
              .describeMetadataQuorum(
                  new DescribeMetadataQuorumOptions().timeoutMs((int) ADMIN_TIMEOUT.toMillis()))
              .quorumInfo()
              .get(ADMIN_TIMEOUT.toMillis() + 1_000, TimeUnit.MILLISECONDS)
              .leaderId();
      return leader >= 0 ? OptionalInt.of(leader) : OptionalInt.empty();
    } catch (ExecutionException | TimeoutException e) {
      return OptionalInt.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return OptionalInt.empty();
    }
  }

  /** Polls {@code condition} until true (true) or {@link #MOVE_WAIT} passed (false). */
  private static boolean awaitTrue(java.util.function.BooleanSupplier condition) {
    return FaultWaits.until(MOVE_WAIT, POLL_MS, condition);
  }

  private static long millisSince(long t0) {
    return FaultWaits.millisSince(t0);
  }

  private static String broker(int node) {
    return "broker-" + node;
  }
}
