package dev.postbox.verify;

import dev.postbox.core.CrashPoints;
import dev.postbox.testkit.RabbitCluster;
import dev.postbox.testkit.RabbitMqServer;
import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The fault-injection campaign on RabbitMQ ({@code ./postbox verify --transport rabbitmq}, and a
 * short round of it in {@code --quick}): PostgreSQL (its own process), a private RabbitMQ node (its
 * own process, from this machine's {@code rabbitmq-server}), two producers, two relays ({@code
 * RelayMain} with the RabbitMQ relay publisher) and two consumers ({@link RabbitConsumerMain}:
 * {@code EFFECTIVELY_ONCE}, key order, single active consumer per shard queue), each its own JVM
 * under the {@link Fleet}'s supervisor. Each scenario: start the producers for a new phase, inject
 * its faults for the phase, heal, drain, and check the whole history with the same {@link
 * HistoryChecker} as the Kafka campaign (lost, dead-lettered, duplicate effects, per-key order,
 * rolled-back messages), reading what was published through its own shard queues ({@link
 * RabbitQueueReader}). RabbitMQ acks instead of committing offsets, so there is no offset audit.
 *
 * <p>Scenarios ({@code rabbitmq-} prefixed in the report): the relay crash points; the consumer
 * crash points (after the inbox insert, and after the effect committed but before the ack); {@code
 * kill -9} of consumers and relays; a consumer frozen (SIGSTOP) past its 2 s heartbeat, so that the
 * broker closes its connection and hands its shards and unacked deliveries to the other consumer
 * while the frozen one's handler may still commit and ack late; connections dropped by the broker
 * ({@code rabbitmqctl close_all_connections}); {@code kill -9} of the broker, restarted; and the
 * same with every consumer stopped first, so that the shard queues hold a backlog of every key.
 *
 * <p>This class picks the scenarios and runs their rounds and checks; {@link RabbitEnvironment}
 * starts the servers and processes, {@link RabbitFaults} injects the external faults.
 *
 * <p>Not thread-safe; run one at a time.
 */
final class RabbitCampaign implements AutoCloseable {

  /** How the campaign runs. */
  record Settings(
      long seed,
      Duration phase,
      double rate,
      Duration recoveryBound,
      Path dir,
      List<String> only,
      int minFires,
      double faultRate,
      CampaignRounds rounds,
      RelayMode relay,
      ConsumerMode consumers,
      boolean cluster,
      boolean asyncStandby) {

    Settings {
      Campaign.Settings.checkFaultRate(faultRate);
      if (relay == RelayMode.TRANSACTIONAL) {
        throw new IllegalArgumentException("the RabbitMQ campaign has no transactional relay");
      }
      if (!consumers.runsOn("rabbitmq")) {
        throw new IllegalArgumentException(
            "the RabbitMQ campaign's consumers: inbox or shard-leases, not " + consumers.cliName());
      }
    }

    /** How many consumer instances run: three share the shards by lease, else two. */
    int consumerCount() {
      return consumers == ConsumerMode.SHARD_LEASES ? 3 : 2;
    }

    /** The wait between two rounds of external faults, for the default {@code ms}. */
    long spaced(long ms) {
      return Campaign.spaced(ms, faultRate);
    }
  }

  /** A scenario: crash points armed in a role, and faults injected from outside. */
  record RabbitScenario(String name, Role armedRole, List<String> points, List<String> external) {}

  static final String PREFIX = "rabbitmq-";
  static final String KILL_9 = "kill-9";
  static final String PAUSE = "pause-consumer-past-heartbeat";
  static final String DROP = "connection-drop";
  static final String BROKER = "broker-kill-restart";
  static final String BROKER_BACKLOG = "broker-kill-with-backlog";
  static final String SCALE = "consumer-leaves-and-rejoins";

  /**
   * The PostgreSQL pair's failover ({@code --cluster}): {@code kill -9} of the primary, the standby
   * promoted, the former primary rebuilt as its standby ({@link FailoverPair}).
   */
  static final String FAILOVER = "postgres-failover"; // as the Kafka campaign's fault

  /**
   * What runs only with {@code --cluster}: a node's kill, the rolling restart, a node cut off and
   * the database's failover.
   */
  static final Set<String> CLUSTER_ONLY =
      Set.of(
          RabbitClusterFaults.NODE_KILL,
          RabbitClusterFaults.ROLLING_RESTART,
          RabbitClusterFaults.NODE_CUT_OFF,
          FAILOVER);

  /**
   * The faults that wait at the round's {@link ProgressGate} until a business transaction of the
   * phase committed since the previous one let through, as the Kafka campaign's kills and database
   * faults do: kills spaced for a fast machine would otherwise be counted over a phase in which
   * nothing was written between them.
   */
  static final Set<String> GATED =
      Set.of(
          KILL_9,
          BROKER,
          BROKER_BACKLOG,
          RabbitClusterFaults.NODE_KILL,
          RabbitClusterFaults.ROLLING_RESTART,
          RabbitClusterFaults.NODE_CUT_OFF,
          FAILOVER);

  /** What a single node's campaign runs and {@code --cluster} does not (the one node's faults). */
  static final Set<String> SINGLE_NODE =
      Set.of(DROP, BROKER, BROKER_BACKLOG, RabbitPartitions.RELAY_FAULT);

  /**
   * The scenarios, in campaign order; with the CDC relay its crash points (after the broker's
   * confirms before the mark, a batch ending inside a transaction) in place of the polling relay's.
   */
  static List<RabbitScenario> all(RelayMode relay) {
    return List.of(
        relay == RelayMode.CDC
            ? new RabbitScenario(
                PREFIX + "cdc-crash-points", Role.RELAY, Scenario.CDC_POINTS, List.of())
            : new RabbitScenario(
                PREFIX + "relay-crash-points", Role.RELAY, Scenario.RELAY_POINTS, List.of()),
        new RabbitScenario(
            PREFIX + "consumer-crash-points",
            Role.CONSUMER,
            List.of(
                CrashPoints.CONSUMER_AFTER_INBOX_INSERT,
                CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT),
            List.of()),
        new RabbitScenario(PREFIX + KILL_9, null, List.of(), List.of(KILL_9)),
        new RabbitScenario(PREFIX + "pauses", null, List.of(), List.of(PAUSE)),
        new RabbitScenario(PREFIX + "connection-drops", null, List.of(), List.of(DROP)),
        new RabbitScenario(PREFIX + "scaling", null, List.of(), List.of(SCALE)),
        new RabbitScenario(PREFIX + "broker-kill", null, List.of(), List.of(BROKER)),
        new RabbitScenario(
            PREFIX + "broker-kill-backlog", null, List.of(), List.of(BROKER_BACKLOG)),
        new RabbitScenario(
            PREFIX + RabbitPartitions.SCENARIO,
            null,
            List.of(),
            List.of(RabbitPartitions.RELAY_FAULT, RabbitPartitions.CONSUMER_FAULT)),
        new RabbitScenario(
            PREFIX + RabbitClusterFaults.NODE_KILL,
            null,
            List.of(),
            List.of(RabbitClusterFaults.NODE_KILL)),
        new RabbitScenario(
            PREFIX + RabbitClusterFaults.ROLLING_RESTART,
            null,
            List.of(),
            List.of(RabbitClusterFaults.ROLLING_RESTART)),
        new RabbitScenario(
            PREFIX + RabbitClusterFaults.NODE_CUT_OFF,
            null,
            List.of(),
            List.of(RabbitClusterFaults.NODE_CUT_OFF)),
        new RabbitScenario(PREFIX + FAILOVER, null, List.of(), List.of(FAILOVER)));
  }

  /**
   * Whether {@code s} runs: every scenario when none is named, except partitions (only named); on a
   * cluster ({@code --cluster}) the node kill, the database's failover and the processes' own
   * faults, never the single node's; the node kill and the failover only on a cluster.
   */
  private boolean selected(RabbitScenario s) {
    boolean named =
        settings.only().contains(s.name())
            || settings.only().contains(s.name().substring(PREFIX.length()));
    boolean clusterOnly = s.external().stream().anyMatch(CLUSTER_ONLY::contains);
    if (settings.cluster()) {
      return !s.external().stream().anyMatch(SINGLE_NODE::contains)
          && (named || settings.only().isEmpty());
    }
    return !clusterOnly && (named || (settings.only().isEmpty() && !isPartitions(s)));
  }

  private static boolean isCutOff(RabbitScenario s) {
    return s.external().contains(RabbitClusterFaults.NODE_CUT_OFF);
  }

  private static boolean isPartitions(RabbitScenario s) {
    return s.name().equals(PREFIX + RabbitPartitions.SCENARIO);
  }

  private final Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private final SplittableRandom random;
  private final RabbitEnvironment env;
  private final RabbitFaults faults;
  private volatile RabbitScenario current;
  private final RabbitMqServer given; // a server the caller owns (a test's shared one), or null

  RabbitCampaign(Settings settings, PrintStream out) {
    this(settings, out, null);
  }

  /** On {@code server} (the caller's, left running), or null for the command's own node. */
  RabbitCampaign(Settings settings, PrintStream out, RabbitMqServer server) {
    this.given = server;
    this.settings = settings;
    this.out = out;
    this.log = new FaultLog(settings.dir().resolve("faults.log"));
    this.random = new SplittableRandom(settings.seed());
    this.env = new RabbitEnvironment(settings, out, log);
    this.faults = new RabbitFaults(env, log, random);
  }

  /**
   * Runs the rounds of every scenario; empty when no RabbitMQ is available (neither {@value
   * RabbitMqServer#URL_ENV} nor a {@code rabbitmq-server} here: one line says so).
   */
  Optional<List<ScenarioResult>> run() throws Exception {
    Optional<String> url =
        Optional.ofNullable(System.getenv(RabbitMqServer.URL_ENV)).filter(s -> !s.isBlank());
    Optional<Path> script = RabbitMqServer.findScript();
    if (settings.cluster() && script.isEmpty()) {
      out.println("rabbitmq: skipped: --cluster needs rabbitmq-server installed here");
      return Optional.empty();
    }
    if (given == null && url.isEmpty() && script.isEmpty()) {
      out.println(
          "rabbitmq: skipped: no rabbitmq-server installed and "
              + RabbitMqServer.URL_ENV
              + " is not set");
      return Optional.empty();
    }
    List<RabbitScenario> scenarios = all(settings.relay()).stream().filter(this::selected).toList();
    List<ScenarioResult> results = new ArrayList<>();
    RabbitPartitions network = RabbitPartitions.none();
    if (scenarios.stream().anyMatch(RabbitCampaign::isPartitions)) {
      Optional<String> why = partitionsUnavailable(given != null || url.isPresent());
      if (why.isPresent()) {
        String name = PREFIX + RabbitPartitions.SCENARIO;
        out.println(name + ": INCONCLUSIVE, not run: " + why.get());
        results.add(ScenarioResult.notRun(name, why.get()));
        scenarios = scenarios.stream().filter(s -> !isPartitions(s)).toList();
        if (scenarios.isEmpty()) {
          return Optional.of(results); // no server started
        }
      } else {
        network = RabbitPartitions.create();
      }
    }
    boolean cutOffs = scenarios.stream().anyMatch(RabbitCampaign::isCutOff);
    if (cutOffs) {
      String name = PREFIX + RabbitClusterFaults.NODE_CUT_OFF;
      Optional<String> why = RabbitCluster.whyNoOwnNetworks();
      if (why.isPresent()) {
        out.println(name + ": INCONCLUSIVE, not run: " + why.get());
        results.add(ScenarioResult.notRun(name, why.get()));
        scenarios = scenarios.stream().filter(s -> !isCutOff(s)).toList();
        cutOffs = false;
        if (scenarios.isEmpty()) {
          return Optional.of(results); // no server started
        }
      } else {
        out.println(name + ": each node runs in its own network namespace (net_ticktime 5 s)");
      }
    }
    env.start(url, script, network, cutOffs, this::arm);
    results.addAll(
        settings.rounds().run(scenarios, RabbitScenario::name, this::round, out, sofar -> {}));
    return Optional.of(results);
  }

  /** Why the partitions cannot run here, or empty. */
  private static Optional<String> partitionsUnavailable(boolean givenBroker) {
    if (givenBroker) {
      return Optional.of(
          "partitions need this command's own RabbitMQ node (listening on the partitions'"
              + " address), not "
              + RabbitMqServer.URL_ENV
              + " or a caller's broker");
    }
    return NetworkPartitions.unavailable();
  }

  /** What a new incarnation is armed with: one of the current scenario's points of its role. */
  private Optional<String> arm(Child c) {
    RabbitScenario s = current;
    if (s == null || s.armedRole() != c.role() || s.points().isEmpty()) {
      return Optional.empty();
    }
    synchronized (random) {
      String point = s.points().get(random.nextInt(s.points().size()));
      return Optional.of(point + "@" + (1 + random.nextInt(Scenario.maxHits(point))));
    }
  }

  /** Round {@code n} of {@code s}: load and faults for the phase, heal, drain, check. */
  private ScenarioResult round(RabbitScenario s, int n) throws Exception {
    log.beginScenario(s.name() + "#" + n);
    current = s;
    // the armed role's processes start armed: the environment restarts them now
    int p = env.beginPhase(s.armedRole(), "arm for " + s.name());
    // crash-point scenarios 1.6 times the phase, as in the Kafka campaign (until 2026-12-02 the
    // others got a fifth of it: `phase * (points ? 1 : 8) / 5`)
    long phaseMs = settings.phase().toMillis() * (s.points().isEmpty() ? 5 : 8) / 5;
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(phaseMs);
    long latest = end + TimeUnit.MILLISECONDS.toNanos(5 * phaseMs);
    HistoryChecker checker = env.checker();
    ProgressGate gate = new ProgressGate(() -> checker.committedIn(p).orElse(-1), Thread::sleep);
    int injections = 0;
    while (System.nanoTime() < end || !enoughFired(s)) {
      if (System.nanoTime() > latest) {
        break; // up to 6 times the phase, as the Kafka campaign's quick rounds
      }
      for (String fault : s.external()) {
        if (GATED.contains(fault) && !gate.await(() -> System.nanoTime() > latest)) {
          break; // no progress until the phase's end: the fault is not injected
        }
        injections += faults.inject(fault);
      }
      Campaign.sleep(s.external().isEmpty() ? 500 : settings.spaced(3_000));
    }
    current = null;
    env.heal(p); // the network whole, the producers stopped, the broker up, every worker unarmed
    long healed = System.nanoTime();
    long bound = healed + settings.recoveryBound().toNanos();
    boolean drained;
    while (!(drained = checker.drained()) && System.nanoTime() < bound) {
      Campaign.sleep(500);
    }
    long recoveryMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - healed);
    Campaign.sleep(1_000); // the reader's last deliveries
    Findings f = checker.check(p);
    Map<String, Integer> fired = log.fired();
    Map<String, Integer> notFired = log.notFired();
    List<String> reasons = inconclusiveReasons(s, p, f, fired);
    injections += s.points().stream().mapToInt(pt -> fired.getOrDefault(pt, 0)).sum();
    log.note("drained", drained + " after " + recoveryMs + " ms");
    return new ScenarioResult(
        s.name(),
        1,
        injections,
        fired,
        notFired,
        f,
        recoveryMs,
        !drained,
        log.unexpectedExits(),
        reasons);
  }

  /**
   * Why round {@code p} of {@code s} proves nothing: no message, a crash point or fault that never
   * fired, or with shard leases the shards not shared.
   */
  private List<String> inconclusiveReasons(
      RabbitScenario s, int p, Findings f, Map<String, Integer> fired) throws SQLException {
    List<String> reasons = new ArrayList<>(f.messages() == 0 ? List.of("no message") : List.of());
    for (String point : s.points()) {
      if (fired.getOrDefault(point, 0) == 0) {
        reasons.add(point + " never fired");
      }
    }
    for (String fault : s.external()) {
      if (fired.getOrDefault(fault, 0) == 0) {
        reasons.add(fault + " never fired");
      }
    }
    if (settings.consumers() == ConsumerMode.SHARD_LEASES) {
      List<String> applying = instancesApplying(p);
      log.note("instances-applying", String.join(",", applying));
      if (applying.size() < 2) {
        reasons.add(
            "shard-leases: "
                + applying.size()
                + " instance(s) applied the phase's messages ("
                + String.join(", ", applying)
                + "), so the shards were not shared among the "
                + settings.consumerCount());
      }
    }
    return reasons;
  }

  /**
   * The consumer instances (by name, any incarnation) that applied messages of phase {@code p}:
   * with shard leases more than one must have, or the instances did not share the shards.
   */
  private List<String> instancesApplying(int p) throws SQLException {
    List<String> names = new ArrayList<>();
    try (Connection c = env.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT split_part(e.instance, '#', 1) AS name, count(*) FROM verify_effect e"
                    + " JOIN verify_business b USING (message_id) WHERE b.phase = ?"
                    + " GROUP BY 1 ORDER BY 1")) {
      ps.setInt(1, p);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1) + "=" + rs.getLong(2));
        }
      }
    }
    return names;
  }

  private boolean enoughFired(RabbitScenario s) {
    Map<String, Integer> fired = log.fired();
    for (String point : s.points()) {
      if (fired.getOrDefault(point, 0) < settings.minFires()) {
        return false;
      }
    }
    for (String fault : s.external()) {
      if (fired.getOrDefault(fault, 0) < 1) {
        return false;
      }
    }
    return true;
  }

  @Override
  public void close() {
    env.close();
    log.close();
  }
}
