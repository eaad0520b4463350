package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.CrashPoints;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.testkit.RabbitMqServer;
import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
      boolean cluster) {

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
   * The faults that wait at the round's {@link ProgressGate} until a business transaction of the
   * phase committed since the previous one let through, as the Kafka campaign's kills and database
   * faults do: kills spaced for a fast machine would otherwise be counted over a phase in which
   * nothing was written between them.
   */
  static final java.util.Set<String> GATED =
      java.util.Set.of(KILL_9, BROKER, BROKER_BACKLOG, RabbitClusterFaults.NODE_KILL);

  /** What a single node's campaign runs and {@code --cluster} does not (the one node's faults). */
  static final java.util.Set<String> SINGLE_NODE =
      java.util.Set.of(DROP, BROKER, BROKER_BACKLOG, RabbitPartitions.RELAY_FAULT);

  /** How long the consumers stay stopped before a {@link #BROKER_BACKLOG} kill. */
  static final long BACKLOG_MS = 4_000;

  /** How long a consumer of the scaling scenario stays away before it joins again. */
  static final long AWAY_MS = 5_000;

  static final int SHARDS = 4;
  static final int KEYS = 200;
  static final int HOT_KEYS = 4;
  static final int PRODUCERS = 2;
  static final int RELAYS = 2;
  static final int LEASE_MS = 3_000;
  static final String SUBSCRIPTION = "verify-consumers";

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
            List.of(RabbitClusterFaults.NODE_KILL)));
  }

  /**
   * Whether {@code s} runs: every scenario when none is named, except partitions (only named); on a
   * cluster ({@code --cluster}) the node kill and the processes' own faults, never the single
   * node's; the node kill only on a cluster.
   */
  private boolean selected(RabbitScenario s) {
    boolean named =
        settings.only().contains(s.name())
            || settings.only().contains(s.name().substring(PREFIX.length()));
    boolean nodeKill = s.external().contains(RabbitClusterFaults.NODE_KILL);
    if (settings.cluster()) {
      return !s.external().stream().anyMatch(SINGLE_NODE::contains)
          && (named || settings.only().isEmpty());
    }
    return !nodeKill && (named || (settings.only().isEmpty() && !isPartitions(s)));
  }

  private static boolean isPartitions(RabbitScenario s) {
    return s.name().equals(PREFIX + RabbitPartitions.SCENARIO);
  }

  private final Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private final SplittableRandom random;
  private PostgresServer pg;
  private RabbitMqServer rabbit;
  private HikariDataSource ds;
  private RabbitQueueReader reader;
  private HistoryChecker checker;
  private Fleet fleet;
  private final List<Child> producers = new ArrayList<>();
  private final List<Child> workers = new ArrayList<>();
  private volatile int phase;
  private volatile RabbitScenario current;
  private final RabbitMqServer given; // a server the caller owns (a test's shared one), or null
  private RabbitPartitions network = RabbitPartitions.none();
  private dev.postbox.testkit.RabbitCluster cluster; // with --cluster, in place of rabbit
  private String topic;

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
    if (settings.cluster()) {
      cluster = RabbitClusterFaults.start(script.get());
    } else {
      rabbit =
          url.map(RabbitMqServer::external)
              .orElseGet(
                  () -> RabbitMqServer.startPrivate(script.get(), network.brokerAddresses()));
    }
    start();
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

  private void start() throws Exception {
    Path dir = settings.dir();
    out.println(
        "postbox verify --transport rabbitmq: seed "
            + settings.seed()
            + ", phases of "
            + settings.phase().toSeconds()
            + " s, relay "
            + settings.relay().cliName()
            + ", "
            + dir);
    PostgresServer.Builder pgb =
        PostgresServer.builder()
            .directory(dir.resolve("postgres"))
            .serverConfig("track_commit_timestamp", "on")
            .startupTimeout(Duration.ofMinutes(3));
    network.configure(pgb, dir);
    pg = pgb.build();
    pg.start();
    String schema = pg.createSchema("verify");
    ds = pg.dataSource(schema, 4);
    PostboxMigrations.migrate(ds);
    HarnessSchema.create(ds, KEYS);
    topic = "verify-rabbit-" + Long.toUnsignedString(settings.seed(), 36);
    String uri = cluster != null ? cluster.uri() : rabbit.uri();
    // on a cluster every client knows every node
    String addresses = cluster != null ? String.join(",", cluster.addresses()) : "";
    reader =
        new RabbitQueueReader(
            uri, cluster != null ? cluster.addresses() : List.of(), topic, SHARDS);
    // the consumers' queues exist before the relays publish (mandatory: nothing unroutable)
    try (com.rabbitmq.client.Connection c = connectionFactory(uri).newConnection("verify-setup");
        com.rabbitmq.client.Channel ch = c.createChannel()) {
      dev.postbox.rabbitmq.RabbitTopology.declareShards(ch, SUBSCRIPTION, topic, SHARDS);
    }
    checker = new HistoryChecker(ds, null, reader, topic, SHARDS, SUBSCRIPTION, log);
    fleet = new Fleet(log);
    // the children reach both servers by the partitions' addresses when there is a network
    String jdbcUrl = network.jdbcUrl(pg.jdbcUrl(schema));
    String childUri = network.amqpUri(uri);
    Path logs = dir.resolve("logs");
    for (int i = 0; i < PRODUCERS; i++) {
      String name = "producer-" + (char) ('a' + i);
      int index = i;
      producers.add(
          fleet.add(
              name,
              Role.PRODUCER,
              (incarnation, instance) ->
                  Fleet.jvm(ProducerMain.class, logs, name, "128m")
                      .args(
                          jdbcUrl,
                          topic,
                          instance,
                          Integer.toString(phase),
                          Double.toString(settings.rate() / PRODUCERS),
                          "3",
                          Integer.toString(KEYS),
                          Integer.toString(HOT_KEYS),
                          Long.toString(
                              settings.seed() * 1_000_003L
                                  + phase * 1_009L
                                  + index * 101L
                                  + incarnation),
                          "20",
                          // the CDC relay's campaign: transactions of 1 to 3 events
                          settings.relay() == RelayMode.CDC ? "3" : "1")));
    }
    boolean cdc = settings.relay() == RelayMode.CDC;
    for (int i = 0; i < RELAYS; i++) {
      String name = "relay-" + (char) ('a' + i);
      workers.add(
          fleet.add(
              name,
              Role.RELAY,
              (incarnation, instance) ->
                  network
                      .place(Fleet.jvm(RelayMain.class, logs, name, "128m"), name)
                      .args(
                          jdbcUrl,
                          childUri,
                          instance,
                          Integer.toString(LEASE_MS),
                          // CDC: small batches, so that batches end inside multi-event transactions
                          cdc ? "4" : "100",
                          "",
                          cdc ? "cdc" : "",
                          addresses)));
    }
    for (int i = 1; i <= settings.consumerCount(); i++) {
      String name = "consumer-" + i;
      workers.add(
          fleet.add(
              name,
              Role.CONSUMER,
              (incarnation, instance) ->
                  network
                      .place(Fleet.jvm(RabbitConsumerMain.class, logs, name, "160m"), name)
                      .args(
                          jdbcUrl,
                          childUri,
                          topic,
                          SUBSCRIPTION,
                          instance,
                          Integer.toString(SHARDS),
                          settings.consumers().cliName(),
                          addresses)));
    }
    fleet.armer(this::arm);
    workers.forEach(fleet::want);
    fleet.awaitStarted(Duration.ofMinutes(2));
    out.println(
        "started: PostgreSQL, RabbitMQ ("
            + (cluster != null
                ? "cluster of " + cluster.size() + " nodes"
                : rabbit.isExternal() ? "external" : "private node")
            + "), "
            + RELAYS
            + " relays, "
            + settings.consumerCount()
            + " consumers ("
            + settings.consumers().cliName()
            + ", "
            + SHARDS
            + " shard queues of "
            + topic
            + ")");
  }

  private static com.rabbitmq.client.ConnectionFactory connectionFactory(String uri)
      throws Exception {
    com.rabbitmq.client.ConnectionFactory f = new com.rabbitmq.client.ConnectionFactory();
    f.setUri(uri);
    return f;
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
    int p = ++phase;
    current = s;
    // the armed role's processes start armed: restart them now (SIGTERM, clean)
    for (Child c : workers) {
      if (c.role() == s.armedRole()) {
        fleet.stop(c, "arm for " + s.name(), true);
      }
    }
    producers.forEach(fleet::want);
    // the phase starts when every process runs (a JVM start on a loaded machine outlasts a short
    // phase: the producers would commit nothing in it)
    fleet.awaitStarted(Duration.ofMinutes(3));
    // crash-point scenarios 1.6 times the phase, as in the Kafka campaign (until 2026-12-02 the
    // others got a fifth of it: `phase * (points ? 1 : 8) / 5`)
    long phaseMs = settings.phase().toMillis() * (s.points().isEmpty() ? 5 : 8) / 5;
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(phaseMs);
    long latest = end + TimeUnit.MILLISECONDS.toNanos(5 * phaseMs);
    ProgressGate gate = new ProgressGate(() -> checker.committedIn(p), Thread::sleep);
    int injections = 0;
    while (System.nanoTime() < end || !enoughFired(s)) {
      if (System.nanoTime() > latest) {
        break; // up to 6 times the phase, as the Kafka campaign's quick rounds
      }
      for (String fault : s.external()) {
        if (GATED.contains(fault) && !gate.await(() -> System.nanoTime() > latest)) {
          break; // no progress until the phase's end: the fault is not injected
        }
        injections += inject(fault);
      }
      Campaign.sleep(s.external().isEmpty() ? 500 : settings.spaced(3_000));
    }
    current = null;
    network.healAll();
    producers.forEach(c -> fleet.stop(c, "end of phase " + p, false));
    // heal: the broker up, every worker running unarmed
    if (cluster != null) {
      cluster.heal();
    } else if (!rabbit.isExternal() && !rabbit.isRunning()) {
      rabbit.start();
    }
    for (Child c : workers) {
      fleet.want(c); // a consumer the scaling scenario took away joins again
      if (c.paused()) {
        fleet.resume(c);
      }
      if (!c.armed().isEmpty()) {
        fleet.stop(c, "disarm", true);
      }
    }
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
   * The consumer instances (by name, any incarnation) that applied messages of phase {@code p}:
   * with shard leases more than one must have, or the instances did not share the shards.
   */
  private List<String> instancesApplying(int p) throws java.sql.SQLException {
    List<String> names = new ArrayList<>();
    try (java.sql.Connection c = ds.getConnection();
        java.sql.PreparedStatement ps =
            c.prepareStatement(
                "SELECT split_part(e.instance, '#', 1) AS name, count(*) FROM verify_effect e"
                    + " JOIN verify_business b USING (message_id) WHERE b.phase = ?"
                    + " GROUP BY 1 ORDER BY 1")) {
      ps.setInt(1, p);
      try (java.sql.ResultSet rs = ps.executeQuery()) {
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

  /** Injects one {@code fault}; returns 1 if it fired. */
  private int inject(String fault) throws Exception {
    List<Child> consumers = workers.stream().filter(c -> c.role() == Role.CONSUMER).toList();
    switch (fault) {
      case KILL_9 -> {
        Child c;
        synchronized (random) {
          c = workers.get(random.nextInt(workers.size()));
        }
        if (c.working() && fleet.kill(c)) {
          log.fired(KILL_9, c.instance(), "SIGKILL");
          return 1;
        }
        return 0;
      }
      case PAUSE -> {
        Child c;
        synchronized (random) {
          c = consumers.get(random.nextInt(consumers.size()));
        }
        if (!c.working() || !fleet.pause(c)) {
          return 0;
        }
        // past the 2 s heartbeat twice over: the broker closes its connection, and its shards
        // (single active consumer) and unacked deliveries go to the other consumer
        Campaign.sleep(RabbitConsumerMain.HEARTBEAT_SECONDS * 3_000L + 1_000);
        fleet.resume(c);
        log.fired(PAUSE, c.instance(), "SIGSTOP for 7 s, then SIGCONT");
        return 1;
      }
      case DROP -> {
        return RabbitBrokerFaults.dropConnections(rabbit, log, settings.dir());
      }
      case SCALE -> {
        return leaveAndRejoin(consumers);
      }
      case BROKER -> {
        return RabbitBrokerFaults.killAndRestart(rabbit, log);
      }
      case BROKER_BACKLOG -> {
        return killWithBacklog(consumers);
      }
      case RabbitClusterFaults.NODE_KILL -> {
        SplittableRandom r;
        synchronized (random) {
          r = random.split();
        }
        return RabbitClusterFaults.killLeaderNode(cluster, SUBSCRIPTION, topic, SHARDS, r, log);
      }
      case RabbitPartitions.RELAY_FAULT, RabbitPartitions.CONSUMER_FAULT -> {
        String name = RabbitPartitions.target(fault);
        Child c = workers.stream().filter(w -> w.name().equals(name)).findFirst().orElseThrow();
        SplittableRandom r;
        synchronized (random) {
          r = random.split(); // the cut lasts seconds: the armer must not wait for the lock
        }
        return network.inject(fault, c, log, r);
      }
      default -> throw new IllegalArgumentException(fault);
    }
  }

  /**
   * An instance leaves and joins again mid-stream (scale down, then up): a working consumer is
   * stopped cleanly (SIGTERM: it closes its subscriber, which gives up its shards) and started
   * again after {@link #AWAY_MS}, while the others go on; with shard leases its shards move to the
   * others and some come back when it rejoins, each handed over in order.
   */
  private int leaveAndRejoin(List<Child> consumers) {
    Child c;
    synchronized (random) {
      c = consumers.get(random.nextInt(consumers.size()));
    }
    if (!c.working()) {
      return 0;
    }
    fleet.stop(c, "scale down", false);
    Campaign.sleep(AWAY_MS);
    fleet.want(c);
    log.fired(SCALE, c.instance(), "SIGTERM, started again after " + AWAY_MS + " ms");
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
    if (rabbit.isExternal() || !rabbit.isRunning()) {
      return 0;
    }
    List<Child> stopped = new ArrayList<>();
    for (Child c : consumers) {
      if (c.working() && fleet.pause(c)) {
        stopped.add(c);
      }
    }
    Campaign.sleep(BACKLOG_MS);
    return RabbitBrokerFaults.killAndRestart(
        rabbit,
        log,
        BROKER_BACKLOG,
        "SIGKILL after " + stopped.size() + " consumers stopped for " + BACKLOG_MS + " ms",
        () -> stopped.forEach(fleet::resume));
  }

  @Override
  public void close() {
    if (fleet != null) {
      fleet.close();
    }
    if (reader != null) {
      reader.close();
    }
    if (ds != null) {
      ds.close();
    }
    if (rabbit != null && rabbit != given && !rabbit.isExternal()) {
      rabbit.close();
    }
    if (cluster != null) {
      cluster.close();
    }
    if (pg != null) {
      pg.close();
    }
    network.close();
    log.close();
  }
}
