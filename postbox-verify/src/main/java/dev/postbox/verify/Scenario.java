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
    KILL_ACTIVE_RELAY("kill-active-relay");

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
    if (only.isEmpty()) {
      return all(relay);
    }
    return java.util.stream.Stream.concat(all(relay).stream(), optional().stream())
        .filter(s -> only.contains(s.name()))
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
                    java.util.stream.Stream.concat(
                            PARTITION_FAULTS.stream(),
                            java.util.stream.Stream.of(Fault.KILL_ACTIVE_RELAY))
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
