package dev.postbox.verify;

import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Injects the RabbitMQ campaign's external faults into its {@link RabbitEnvironment}: {@code kill
 * -9} of a relay or consumer, a consumer frozen past its heartbeat, a consumer leaving and joining
 * again, the broker's faults ({@link RabbitBrokerFaults}: connections dropped, {@code kill -9} of
 * the node, also with a backlog in every shard queue), a cluster node's {@code kill -9} and the
 * cluster's rolling restart ({@link RabbitClusterFaults}), the PostgreSQL pair's failover ({@link
 * FailoverPair}) and the network cuts ({@link RabbitPartitions}). Each picks its target with the
 * campaign's random numbers. Not thread-safe (the random numbers are shared under their lock).
 */
final class RabbitFaults {

  /** How long the consumers stay stopped before a {@link RabbitCampaign#BROKER_BACKLOG} kill. */
  static final long BACKLOG_MS = 4_000;

  /** How long a consumer of the scaling scenario stays away before it joins again. */
  static final long AWAY_MS = 5_000;

  private final RabbitEnvironment env;
  private final FaultLog log;
  private final SplittableRandom random;

  /** Faults on {@code env}, logged to {@code log}, targets picked with {@code random}. */
  RabbitFaults(RabbitEnvironment env, FaultLog log, SplittableRandom random) {
    this.env = env;
    this.log = log;
    this.random = random;
  }

  /** Injects one {@code fault}; returns 1 if it fired. */
  int inject(String fault) throws Exception {
    List<Child> workers = env.workers();
    List<Child> consumers = workers.stream().filter(c -> c.role() == Role.CONSUMER).toList();
    return switch (fault) {
      case RabbitCampaign.KILL_9 -> kill9(workers);
      case RabbitCampaign.PAUSE -> pausePastHeartbeat(consumers);
      case RabbitCampaign.DROP ->
          RabbitBrokerFaults.dropConnections(env.rabbit(), log, env.directory());
      case RabbitCampaign.SCALE -> leaveAndRejoin(consumers);
      case RabbitCampaign.BROKER -> RabbitBrokerFaults.killAndRestart(env.rabbit(), log);
      case RabbitCampaign.BROKER_BACKLOG -> killWithBacklog(consumers);
      case RabbitClusterFaults.NODE_KILL ->
          RabbitClusterFaults.killLeaderNode(
              env.cluster(),
              RabbitEnvironment.SUBSCRIPTION,
              env.topic(),
              RabbitEnvironment.SHARDS,
              split(),
              log);
      case RabbitClusterFaults.ROLLING_RESTART ->
          RabbitClusterFaults.rollingRestart(
              env.cluster(),
              RabbitEnvironment.SUBSCRIPTION,
              env.topic(),
              RabbitEnvironment.SHARDS,
              log);
      case RabbitClusterFaults.NODE_CUT_OFF ->
          RabbitClusterFaults.cutOffLeaderNode(
              env.cluster(),
              RabbitEnvironment.SUBSCRIPTION,
              env.topic(),
              RabbitEnvironment.SHARDS,
              split(),
              log);
      case RabbitCampaign.FAILOVER -> failover();
      case RabbitPartitions.RELAY_FAULT, RabbitPartitions.CONSUMER_FAULT -> partition(fault);
      default -> throw new IllegalArgumentException(fault);
    };
  }

  /** The PostgreSQL pair's failover ({@link FailoverPair#inject}); the pair's own lock suffices. */
  private int failover() {
    FailoverPair pair =
        env.pair()
            .orElseThrow(() ->
                new IllegalStateException("no PostgreSQL standby: a failover needs --cluster"));
    return pair.inject(
        RabbitCampaign.FAILOVER, env.settings().relay() == RelayMode.CDC, log, pair::failover);
  }

  /** The network cut {@code fault} of its process (a relay's or a consumer's). */
  private int partition(String fault) {
    String name = RabbitPartitions.target(fault);
    Child c = env.workers().stream().filter(w -> w.name().equals(name)).findFirst().orElseThrow();
    // the cut lasts seconds: the armer must not wait for the lock
    return env.network().inject(fault, c, log, split());
  }

  /** {@code kill -9} of a random relay or consumer, if it is working. */
  private int kill9(List<Child> workers) {
    Child c = pick(workers);
    if (c.working() && env.fleet().kill(c)) {
      log.fired(RabbitCampaign.KILL_9, c.instance(), "SIGKILL");
      return 1;
    }
    return 0;
  }

  /**
   * A random working consumer frozen (SIGSTOP) past its 2 s heartbeat twice over: the broker closes
   * its connection, and its shards (single active consumer) and unacked deliveries go to the other
   * consumer; then SIGCONT.
   */
  private int pausePastHeartbeat(List<Child> consumers) {
    Child c = pick(consumers);
    if (!c.working() || !env.fleet().pause(c)) {
      return 0;
    }
    Campaign.sleep(RabbitConsumerMain.HEARTBEAT_SECONDS * 3_000L + 1_000);
    env.fleet().resume(c);
    log.fired(RabbitCampaign.PAUSE, c.instance(), "SIGSTOP for 7 s, then SIGCONT");
    return 1;
  }

  /**
   * An instance leaves and joins again mid-stream (scale down, then up): a working consumer is
   * stopped cleanly (SIGTERM: it closes its subscriber, which gives up its shards) and started
   * again after {@link #AWAY_MS}, while the others go on; with shard leases its shards move to the
   * others and some come back when it rejoins, each handed over in order.
   */
  private int leaveAndRejoin(List<Child> consumers) {
    Child c = pick(consumers);
    if (!c.working()) {
      return 0;
    }
    env.fleet().stop(c, "scale down", false);
    Campaign.sleep(AWAY_MS);
    env.fleet().want(c);
    log.fired(
        RabbitCampaign.SCALE, c.instance(), "SIGTERM, started again after " + AWAY_MS + " ms");
    return 1;
  }

  /**
   * Stops (SIGSTOP) every consumer, lets the relays go on publishing for {@link #BACKLOG_MS} so
   * that every shard queue holds older messages of its keys and batches wait for confirms, kills
   * the node ({@code kill -9}), resumes the consumers and starts the node again: after the restart
   * each key must still route to the queue that holds its older messages (issue 38: the
   * consistent-hash exchange moved keys to other queues, and two consumers applied one key at
   * once).
   */
  private int killWithBacklog(List<Child> consumers) {
    if (env.rabbit().isExternal() || !env.rabbit().isRunning()) {
      return 0;
    }
    List<Child> stopped = new ArrayList<>();
    for (Child c : consumers) {
      if (c.working() && env.fleet().pause(c)) {
        stopped.add(c);
      }
    }
    Campaign.sleep(BACKLOG_MS);
    return RabbitBrokerFaults.killAndRestart(
        env.rabbit(),
        log,
        RabbitCampaign.BROKER_BACKLOG,
        "SIGKILL after " + stopped.size() + " consumers stopped for " + BACKLOG_MS + " ms",
        () -> stopped.forEach(env.fleet()::resume));
  }

  private Child pick(List<Child> among) {
    synchronized (random) {
      return among.get(random.nextInt(among.size()));
    }
  }

  private SplittableRandom split() {
    synchronized (random) {
      return random.split();
    }
  }
}
