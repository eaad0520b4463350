package dev.postbox.verify;

import dev.postbox.core.CrashPoints;
import java.util.List;
import java.util.Set;

/**
 * One scenario of the campaign: which crash points its processes are armed with, and which faults
 * are injected from outside.
 *
 * @param name the name in the report
 * @param crashPoints the crash points armed (each new incarnation of a process whose role has some
 *     is armed with one of them, at a seeded hit count)
 * @param armProbability the probability that a new incarnation is armed at all
 * @param external faults injected from outside the processes
 * @param parking whether the consumers run with ordered parking (few in-place retries, then the key
 *     is parked) and a handler that fails transiently for some keys for a while, so that keys are
 *     parked and unparked during the faults
 */
record Scenario(
    String name,
    List<String> crashPoints,
    double armProbability,
    Set<Fault> external,
    boolean parking) {

  Scenario(String name, List<String> crashPoints, double armProbability, Set<Fault> external) {
    this(name, crashPoints, armProbability, external, false);
  }

  /** Faults the harness injects from outside. */
  enum Fault {
    KILL_9("kill-9"),
    PAUSE_RELAY("pause-relay"),
    PAUSE_CONSUMER("pause-consumer"),
    BROKER_RESTART("broker-kill-restart"),
    POSTGRES_RESTART("postgres-restart"),
    POSTGRES_CRASH("postgres-crash"),
    POSTGRES_TERMINATE("pg-terminate-backend"),
    /** A relay (in its network namespace) cut off from PostgreSQL, not from the broker. */
    PARTITION_RELAY_POSTGRES("partition-relay-postgres"),
    /** A consumer (in its network namespace) cut off from the broker, not from PostgreSQL. */
    PARTITION_CONSUMER_KAFKA("partition-consumer-kafka"),
    /** CDC: {@code kill -9} of the relay that holds the slot lease; a standby takes over. */
    KILL_ACTIVE_RELAY("kill-active-relay"),
    /** Cluster: {@code kill -9} of the broker leading a partition of the topic, then a start. */
    CLUSTER_LEADER_KILL("cluster-leader-kill"),
    /** Cluster: {@code SIGSTOP} of a partition's leader past its session timeout, then SIGCONT. */
    CLUSTER_LEADER_FREEZE("cluster-leader-freeze"),
    /** Cluster: {@code kill -9} of the active KRaft controller (a combined node), then a start. */
    CLUSTER_CONTROLLER_KILL("cluster-controller-kill"),
    /** Cluster: each broker stopped cleanly and started again in turn (one roll). */
    CLUSTER_ROLLING_RESTART("cluster-rolling-restart"),
    /**
     * Cluster: every partition's in-sync replicas below {@code min.insync.replicas} for a while (a
     * broker killed while the topic asks for all three), then the broker back and the minimum 2.
     */
    CLUSTER_ISR_BELOW_MIN("cluster-isr-below-min"),
    /**
     * Cluster: a partition's leader cut off from the other brokers and the controller quorum (its
     * packets dropped both ways) while the relays and consumers still reach it, then reconnected.
     */
    CLUSTER_BROKER_CUT_OFF("cluster-broker-cut-off"),
    /**
     * Cluster: {@code kill -9} of the PostgreSQL primary, its synchronous standby promoted, then
     * the former primary rebuilt as the new primary's standby.
     */
    POSTGRES_FAILOVER("postgres-failover");

    final String kind;

    Fault(String kind) {
      this.kind = kind;
    }
  }

  static final List<String> RELAY_POINTS =
      List.of(
          CrashPoints.RELAY_AFTER_CLAIM,
          CrashPoints.RELAY_MID_BATCH,
          CrashPoints.RELAY_AFTER_ACK_BEFORE_MARK,
          CrashPoints.RELAY_AFTER_MARK);
  static final List<String> CONSUMER_POINTS =
      List.of(
          CrashPoints.CONSUMER_AFTER_INBOX_INSERT,
          CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT,
          CrashPoints.CONSUMER_DURING_REBALANCE);

  /** The CDC relay's crash points ({@code --relay cdc}). */
  static final List<String> CDC_POINTS =
      List.of(CrashPoints.CDC_AFTER_ACK_BEFORE_MARK, CrashPoints.CDC_MID_TRANSACTION);

  static final List<String> PRODUCER_POINTS =
      List.of(CrashPoints.OUTBOX_BEFORE_COMMIT, CrashPoints.OUTBOX_AFTER_COMMIT);

  /** The database's faults: fast restart, crash (SIGKILL, then crash recovery), killed sessions. */
  static final Set<Fault> DATABASE_FAULTS =
      Set.of(Fault.POSTGRES_RESTART, Fault.POSTGRES_CRASH, Fault.POSTGRES_TERMINATE);

  /** Every crash point of the product, in report order. */
  static List<String> allCrashPoints() {
    return concat(PRODUCER_POINTS, RELAY_POINTS, CONSUMER_POINTS);
  }

  /** The network partitions (root only; see {@link NetworkPartitions}). */
  static final Set<Fault> PARTITION_FAULTS =
      Set.of(Fault.PARTITION_RELAY_POSTGRES, Fault.PARTITION_CONSUMER_KAFKA);

  /**
   * The faults of a three-broker cluster and a PostgreSQL primary with a standby ({@code
   * --cluster}); none runs on the single broker and server.
   */
  static final Set<Fault> CLUSTER_FAULTS =
      Set.of(
          Fault.CLUSTER_LEADER_KILL,
          Fault.CLUSTER_LEADER_FREEZE,
          Fault.CLUSTER_CONTROLLER_KILL,
          Fault.CLUSTER_ROLLING_RESTART,
          Fault.CLUSTER_ISR_BELOW_MIN,
          Fault.CLUSTER_BROKER_CUT_OFF,
          Fault.POSTGRES_FAILOVER);

  /** The single broker's fault, which does not run on a cluster. */
  static final Set<Fault> SINGLE_BROKER_FAULTS = Set.of(Fault.BROKER_RESTART);

  /** Whether this scenario injects a cluster's fault (and so runs only with {@code --cluster}). */
  boolean cluster() {
    return external.stream().anyMatch(CLUSTER_FAULTS::contains);
  }

  /**
   * Whether this scenario injects the single broker's fault (and so not with {@code --cluster}).
   */
  boolean singleBroker() {
    return external.stream().anyMatch(SINGLE_BROKER_FAULTS::contains);
  }

  /** The name of the partitions scenario. */
  static final String PARTITIONS = "partitions";

  /** Whether this scenario cuts the network (and so needs namespaces). */
  boolean partitions() {
    return external.stream().anyMatch(PARTITION_FAULTS::contains);
  }

  /**
   * The scenarios run only when named ({@code --scenarios partitions}): the partitions scenario
   * needs root and moves a relay and a consumer into network namespaces.
   */
  static List<Scenario> optional() {
    return List.of(new Scenario(PARTITIONS, List.of(), 0, PARTITION_FAULTS));
  }

  /**
   * The scenarios of a campaign with {@code relay} named in {@code only}, in campaign order, or
   * {@link #all(RelayMode)} if it is empty.
   */
  static List<Scenario> selected(RelayMode relay, List<String> only) {
    return selected(relay, false, only);
  }

  /**
   * As {@link #selected(RelayMode, List)}; {@code cluster}: of the campaign on a three-broker
   * cluster ({@link #all(RelayMode, boolean)}; the partitions scenario is not one of them).
   */
  static List<Scenario> selected(RelayMode relay, boolean cluster, List<String> only) {
    if (only.isEmpty()) {
      return all(relay, cluster);
    }
    List<Scenario> optional = cluster ? List.of() : optional();
    return java.util.stream.Stream.concat(all(relay, cluster).stream(), optional.stream())
        .filter(s -> only.contains(s.name()))
        .toList();
  }

  /**
   * The scenarios of a campaign with {@code relay}; {@code cluster}: on a three-broker cluster, the
   * cluster's scenarios ({@link #cluster()}) first, then the processes' own ones without the single
   * broker's fault (the broker-restart scenario is left out, and mixed kills a partition's leader
   * in its place and fails PostgreSQL over as well).
   */
  static List<Scenario> all(RelayMode relay, boolean cluster) {
    if (!cluster) {
      return all(relay);
    }
    List<Scenario> scenarios = new java.util.ArrayList<>(clusterScenarios());
    for (Scenario s : all(relay)) {
      if (s.external().equals(SINGLE_BROKER_FAULTS)) {
        continue;
      }
      if (s.singleBroker()) {
        java.util.EnumSet<Fault> external = java.util.EnumSet.copyOf(s.external());
        external.removeAll(SINGLE_BROKER_FAULTS);
        external.add(Fault.CLUSTER_LEADER_KILL);
        external.add(Fault.POSTGRES_FAILOVER);
        s = new Scenario(s.name(), s.crashPoints(), s.armProbability(), external, s.parking());
      }
      scenarios.add(s);
    }
    return List.copyOf(scenarios);
  }

  /**
   * The scenarios of a three-broker cluster and a PostgreSQL pair, each named after its one fault:
   * a partition leader killed, a partition leader frozen past its session timeout, the active
   * controller killed, a rolling restart, the in-sync replicas below the minimum for a while, a
   * partition leader cut off from the other nodes (root only: each broker in its own network
   * namespace), and the PostgreSQL primary failing over to its standby.
   */
  static List<Scenario> clusterScenarios() {
    return java.util.stream.Stream.of(
            Fault.CLUSTER_LEADER_KILL,
            Fault.CLUSTER_LEADER_FREEZE,
            Fault.CLUSTER_CONTROLLER_KILL,
            Fault.CLUSTER_ROLLING_RESTART,
            Fault.CLUSTER_ISR_BELOW_MIN,
            Fault.CLUSTER_BROKER_CUT_OFF,
            Fault.POSTGRES_FAILOVER)
        .map(f -> new Scenario(f.kind, List.of(), 0, Set.of(f)))
        .toList();
  }

  /**
   * The scenarios of a campaign with {@code relay}: the CDC relay's own ({@link #cdc()}), else
   * {@link #all()}.
   */
  static List<Scenario> all(RelayMode relay) {
    return relay == RelayMode.CDC ? cdc() : all();
  }

  /**
   * The CDC relay's scenarios: its crash points (after the broker's ack, before the mark and the
   * slot confirm; the same inside a multi-event transaction), kill -9 of any process mid-stream,
   * kill -9 of the streaming relay (a standby takes over), SIGSTOP of the streaming relay past its
   * slot lease (and of a consumer), PostgreSQL restarts, crashes (immediate shutdown) and killed
   * sessions (the walsender among them).
   */
  static List<Scenario> cdc() {
    return List.of(
        new Scenario("cdc-crash-points", CDC_POINTS, 1.0, Set.of()),
        new Scenario("kill-9", List.of(), 0, Set.of(Fault.KILL_9)),
        new Scenario("standby-takeover", List.of(), 0, Set.of(Fault.KILL_ACTIVE_RELAY)),
        new Scenario("pauses", List.of(), 0, Set.of(Fault.PAUSE_RELAY, Fault.PAUSE_CONSUMER)),
        new Scenario("postgres-restart", List.of(), 0, DATABASE_FAULTS));
  }

  /** The scenarios, in campaign order. */
  static List<Scenario> all() {
    return List.of(
        new Scenario("producer-crash-points", PRODUCER_POINTS, 1.0, Set.of()),
        new Scenario("relay-crash-points", RELAY_POINTS, 1.0, Set.of()),
        new Scenario("consumer-crash-points", CONSUMER_POINTS, 1.0, Set.of()),
        new Scenario("kill-9", List.of(), 0, Set.of(Fault.KILL_9)),
        new Scenario("pauses", List.of(), 0, Set.of(Fault.PAUSE_RELAY, Fault.PAUSE_CONSUMER)),
        new Scenario("broker-restart", List.of(), 0, Set.of(Fault.BROKER_RESTART)),
        new Scenario("postgres-restart", List.of(), 0, DATABASE_FAULTS),
        new Scenario("parking", List.of(), 0, DATABASE_FAULTS, true),
        new Scenario(
            "mixed",
            allCrashPoints(),
            1.0,
            java.util.EnumSet.complementOf(
                java.util.EnumSet.copyOf(
                    java.util.stream.Stream.of(
                            PARTITION_FAULTS.stream(),
                            CLUSTER_FAULTS.stream(),
                            java.util.stream.Stream.of(Fault.KILL_ACTIVE_RELAY))
                        .flatMap(f -> f)
                        .toList()))));
  }

  /** Which process role a crash point lives in. */
  static Fleet.Role roleOf(String point) {
    if (point.startsWith("relay.") || point.startsWith("cdc.")) {
      return Fleet.Role.RELAY;
    }
    if (point.startsWith("consumer.")) {
      return Fleet.Role.CONSUMER;
    }
    return Fleet.Role.PRODUCER;
  }

  /** The highest hit count a crash point is armed at (small enough to fire under the load). */
  static int maxHits(String point) {
    return switch (point) {
      case CrashPoints.CONSUMER_DURING_REBALANCE -> 1;
      case CrashPoints.RELAY_AFTER_CLAIM,
          CrashPoints.RELAY_MID_BATCH,
          CrashPoints.RELAY_AFTER_ACK_BEFORE_MARK,
          CrashPoints.RELAY_AFTER_MARK ->
          3;
      case CrashPoints.OUTBOX_BEFORE_COMMIT, CrashPoints.OUTBOX_AFTER_COMMIT -> 10;
      case CrashPoints.CDC_AFTER_ACK_BEFORE_MARK -> 3;
      case CrashPoints.CDC_MID_TRANSACTION -> 2;
      default -> 6;
    };
  }

  @SafeVarargs
  private static List<String> concat(List<String>... lists) {
    return java.util.Arrays.stream(lists).flatMap(List::stream).toList();
  }
}
