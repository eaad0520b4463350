package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostgresServer;
import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import dev.postbox.verify.HistoryChecker.Findings;
import dev.postbox.verify.Scenario.Fault;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.common.GroupState;

/**
 * A fault-injection campaign: PostgreSQL (its own process, synchronous commit on), a Kafka broker
 * (its own JVM), two producer application instances, two relays and three consumers (each its own
 * JVM, restarted by a supervisor after each death), and the scenarios run one after the other on
 * that system. Each scenario: start the producer, inject its faults for a while, heal everything,
 * drain, and check the whole history, counting what the scenario's business transactions show.
 *
 * <p>Not thread-safe; run one campaign at a time.
 */
final class Campaign implements AutoCloseable {

  /** How a campaign runs. */
  record Settings(
      long seed,
      Duration phase,
      int minRounds,
      long targetInjections,
      Duration recoveryBound,
      double rate,
      List<String> only,
      Path dir,
      int minFires) {}

  static final int PARTITIONS = 6;
  static final int KEYS = 400;
  static final int HOT_KEYS = 8;
  static final int PRODUCERS = 2;
  static final int RELAYS = 2;
  static final int CONSUMERS = 3;
  static final int LEASE_MS = 3_000;
  static final int SESSION_MS = 6_000;
  static final int IDLE_IN_TX_MS = 4_000;
  static final String GROUP = "verify-consumers";
  static final String DYNAMIC_MEMBER = "consumer-" + CONSUMERS;
  // how often a phase whose consumer waits for a revocation nudges the group (after a quarter)
  private static final Duration NUDGE_INTERVAL = Duration.ofSeconds(20);

  private final Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private PostgresServer pg;
  private KafkaBroker kafka;
  private HikariDataSource ds;
  private Admin admin;
  private TopicReader reader;
  private HistoryChecker checker;
  private Fleet fleet;
  private final List<Child> producers = new ArrayList<>();
  private String topic;
  private volatile int phase;
  // whether the consumers run with ordered parking (the parking scenario); read at each start
  private volatile boolean consumerParking;
  private TransientFailures failures;
  // with minFires, a phase also goes on until this many business transactions committed in it
  private static final int MIN_COMMITTED = 50;

  Campaign(Settings settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
    this.log = new FaultLog(settings.dir().resolve("faults.log"));
  }

  /** Runs every scenario; returns one result per scenario name (rounds merged). */
  List<ScenarioResult> run() throws Exception {
    return run(results -> {});
  }

  /**
   * Runs every scenario; after each one, hands the results so far to {@code progress} (so that a
   * long campaign stopped early still leaves its report).
   */
  List<ScenarioResult> run(java.util.function.Consumer<List<ScenarioResult>> progress)
      throws Exception {
    setUp();
    List<Scenario> scenarios =
        Scenario.all().stream()
            .filter(s -> settings.only().isEmpty() || settings.only().contains(s.name()))
            .toList();
    Map<String, ScenarioResult> results = new LinkedHashMap<>();
    long injections = 0;
    int round = 0;
    while (round < settings.minRounds() || injections < settings.targetInjections()) {
      round++;
      for (Scenario s : scenarios) {
        ScenarioResult r = runScenario(s, round);
        injections += r.injections();
        results.merge(s.name(), r, ScenarioResult::merge);
        progress.accept(List.copyOf(results.values()));
        out.printf(
            "%s round %d: %d injections, %d messages, %d violations, recovery %d ms%s (total"
                + " injections %d)%n",
            s.name(),
            round,
            r.injections(),
            r.findings().messages(),
            r.findings().violations(),
            r.maxRecoveryMs(),
            r.inconclusive() ? ", INCONCLUSIVE " + r.inconclusiveReasons() : "",
            injections);
        out.flush();
      }
    }
    return List.copyOf(results.values());
  }

  private void setUp() throws Exception {
    Path dir = settings.dir();
    out.println("postbox verify: seed " + settings.seed() + ", report directory " + dir);
    pg =
        PostgresServer.builder()
            .directory(dir.resolve("postgres"))
            .serverConfig("track_commit_timestamp", "on")
            .build();
    pg.start();
    kafka =
        KafkaBroker.builder()
            .dataDirectory(dir.resolve("kafka"))
            .maxHeap("384m")
            .startupTimeout(Duration.ofMinutes(3))
            .build();
    kafka.start();
    String schema = pg.createSchema("verify");
    ds = pg.dataSource(schema, 4);
    PostboxMigrations.migrate(ds);
    HarnessSchema.create(ds, KEYS);
    topic = "verify-" + Long.toUnsignedString(settings.seed(), 36);
    kafka.createTopic(topic, PARTITIONS);
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    ap.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
    admin = Admin.create(ap);
    reader = new TopicReader(kafka.bootstrapServers(), topic, PARTITIONS);
    checker = new HistoryChecker(ds, admin, reader, topic, PARTITIONS, GROUP, log);
    fleet = new Fleet(log);
    failures = new TransientFailures(ds, log);
    String jdbcUrl = pg.jdbcUrl(schema);
    String bootstrap = kafka.bootstrapServers();
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
                          "20")));
    }
    for (int i = 0; i < RELAYS; i++) {
      String name = "relay-" + (char) ('a' + i);
      fleet.add(
          name,
          Role.RELAY,
          (incarnation, instance) ->
              Fleet.jvm(RelayMain.class, logs, name, "128m")
                  .args(jdbcUrl, bootstrap, instance, Integer.toString(LEASE_MS), "100"));
    }
    for (int i = 1; i <= CONSUMERS; i++) {
      String name = "consumer-" + i;
      // consumers 1 and 2 are static members (a restart takes their partitions back at once); the
      // last one is dynamic, so its restarts make the group rebalance and revoke partitions
      boolean staticMember = i < CONSUMERS;
      fleet.add(
          name,
          Role.CONSUMER,
          (incarnation, instance) ->
              Fleet.jvm(ConsumerMain.class, logs, name, "160m")
                  // its assignment, revocations and membership-fence waits, and its state file
                  .jvmOptions("-Dorg.slf4j.simpleLogger.log.dev.postbox.kafka=info")
                  .systemProperty(ConsumerStateFile.PROPERTY, stateFile(name).toString())
                  .args(
                      jdbcUrl,
                      bootstrap,
                      topic,
                      GROUP,
                      instance,
                      Integer.toString(SESSION_MS),
                      Integer.toString(IDLE_IN_TX_MS),
                      staticMember ? name : "",
                      consumerParking ? "parking" : ""));
    }
    for (Child c : fleet.children()) {
      if (c.role() != Role.PRODUCER) {
        fleet.want(c);
      }
    }
    fleet.awaitStarted(Duration.ofMinutes(2));
    out.println(
        "started: PostgreSQL, Kafka broker, "
            + RELAYS
            + " relays, "
            + CONSUMERS
            + " consumers (topic "
            + topic
            + ", "
            + PARTITIONS
            + " partitions)");
  }

  private ScenarioResult runScenario(Scenario s, int round) throws Exception {
    phase++;
    log.beginScenario(s.name() + "#" + round);
    long scenarioSeed = settings.seed() ^ (s.name().hashCode() * 0x9E3779B97F4A7C15L) ^ round;
    Map<String, SplittableRandom> armRandoms = new TreeMap<>();
    rotation.clear();
    fleet.armer(c -> arm(s, c, armRandoms, scenarioSeed));
    // re-arm the running processes whose role this scenario arms; restart the consumers if the
    // scenario turns parking on or off
    boolean parkingChanges = consumerParking != s.parking();
    consumerParking = s.parking();
    List<Thread> rearm = new ArrayList<>();
    for (Child c : fleet.children()) {
      if (c.role() != Role.PRODUCER
              && s.crashPoints().stream().anyMatch(p -> Scenario.roleOf(p) == c.role())
          || c.role() == Role.CONSUMER && parkingChanges) {
        rearm.add(Thread.ofPlatform().start(() -> fleet.stop(c, "re-arm", true)));
      }
    }
    for (Thread t : rearm) {
      t.join();
    }
    awaitGroupStable(Duration.ofSeconds(60));
    producers.forEach(fleet::want);
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> injectors = new ArrayList<>();
    for (Fault f : s.external()) {
      SplittableRandom r = new SplittableRandom(scenarioSeed * 31 + f.ordinal());
      // with every kind of fault at once, each comes half as often
      // the parking scenario's database faults leave room for keys to be parked and unparked
      double spacing = s.parking() ? 2.0 : s.external().size() > 3 ? 1.5 : 1.0;
      injectors.add(
          Thread.ofPlatform()
              .name("inject-" + f.kind)
              .start(() -> injectLoop(f, r, spacing, stop)));
    }
    if (s.parking()) {
      SplittableRandom r = new SplittableRandom(scenarioSeed * 37);
      injectors.add(
          Thread.ofPlatform().name("transient-failures").start(() -> failures.run(r, stop)));
    }
    // crash points need process restarts to fire again: their scenarios get more time
    Duration phaseTime =
        s.external().isEmpty() ? settings.phase().multipliedBy(8).dividedBy(5) : settings.phase();
    long start = System.nanoTime();
    long end = start + phaseTime.toNanos();
    // with minFires, the phase goes on (up to 6 times as long) until every fault it schedules
    // fired that often and some business transactions committed, so a slow machine gets a longer
    // phase instead of an inconclusive one
    long latest = start + phaseTime.multipliedBy(settings.minFires() > 0 ? 6 : 1).toNanos();
    long nextNudge = start + phaseTime.toNanos() / 4;
    while (System.nanoTime() < end || (System.nanoTime() < latest && !enoughFired(s))) {
      // sample the committed offsets all through the faults (the injectors never wait for it)
      checker.auditOffsets();
      if (System.nanoTime() - nextNudge >= 0 && waitingForRevocation()) {
        nudgeRebalance();
        nextNudge = System.nanoTime() + NUDGE_INTERVAL.toNanos();
      }
      Thread.sleep(500);
    }
    stop.set(true);
    for (Thread t : injectors) {
      t.join();
    }
    // heal: no more arming, producer stopped, armed processes restarted unarmed, servers up
    fleet.armer(c -> Optional.empty());
    for (Child p : producers) {
      fleet.stop(p, "end of phase", false);
    }
    List<Thread> heal = new ArrayList<>();
    for (Child c : fleet.children()) {
      if (c.role() != Role.PRODUCER && (!c.armed().isEmpty() || !c.alive())) {
        heal.add(Thread.ofPlatform().start(() -> fleet.stop(c, "heal", true)));
      }
    }
    for (Thread t : heal) {
      t.join();
    }
    ensureUp();
    fleet.awaitStarted(Duration.ofMinutes(3));
    long healed = System.nanoTime();
    log.note("healed", "all processes up, broker and PostgreSQL up; draining");
    boolean drained = false;
    long recoveryDeadline = healed + settings.recoveryBound().toNanos();
    while (System.nanoTime() < recoveryDeadline) {
      if (checker.drained()) {
        drained = true;
        break;
      }
      Thread.sleep(250);
    }
    long recoveryMs = (System.nanoTime() - healed) / 1_000_000;
    if (!drained) {
      dumpConsumers(); // while it is stalled: the group and what each consumer is doing
      // keep waiting (the bound is exceeded, a violation) so the rest of the checks see the end
      long more = System.nanoTime() + settings.recoveryBound().toNanos();
      while (System.nanoTime() < more && !checker.drained()) {
        Thread.sleep(500);
      }
      log.note("recovery-bound-exceeded", "not drained " + recoveryMs + " ms after the heal");
    }
    log.note("drained", recoveryMs + " ms after the heal");
    Findings f = checker.check(phase);
    Map<String, Integer> fired = log.fired();
    Map<String, Integer> notFired = log.notFired();
    List<String> reasons = new ArrayList<>();
    if (s.external().isEmpty()) {
      // a crash-point scenario: every point it arms must have fired
      for (String p : s.crashPoints()) {
        if (fired.getOrDefault(p, 0) == 0) {
          reasons.add(p + " never fired");
        }
      }
    } else if (!s.crashPoints().isEmpty()
        && s.crashPoints().stream().mapToInt(p -> fired.getOrDefault(p, 0)).sum() == 0) {
      // mixed: the other faults often end an armed process first; some crash point must fire
      reasons.add("no crash point fired");
    }
    for (Fault x : s.external()) {
      if (fired.getOrDefault(x.kind, 0) == 0) {
        reasons.add(x.kind + " never fired");
      }
      if (notFired.getOrDefault(x.kind, 0) > 0) {
        reasons.add(notFired.get(x.kind) + " scheduled " + x.kind + " did not fire");
      }
    }
    // no business transaction, no offset sample, no record audited, nothing parked
    reasons.addAll(f.inconclusiveReasons(s.parking()));
    int injections = fired.values().stream().mapToInt(Integer::intValue).sum();
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

  private Path stateFile(String consumer) {
    return settings.dir().resolve("logs").resolve(consumer + ".state");
  }

  /** The group's description and each consumer's state, into the fault log and the output. */
  private void dumpConsumers() {
    List<Path> files = new ArrayList<>();
    for (int i = 1; i <= CONSUMERS; i++) {
      files.add(stateFile("consumer-" + i));
    }
    for (String line : DrainDiagnostics.describe(admin, GROUP, files)) {
      log.note("drain-diagnostics", line);
      out.println("  " + line);
    }
    out.flush();
  }

  /** Whether every fault {@code s} schedules fired {@code minFires} times (mixed: see below). */
  /** Whether a running consumer is armed to crash in a revocation (and so waits for one). */
  private boolean waitingForRevocation() {
    return fleet.children().stream()
        .anyMatch(c -> c.alive() && c.armed().startsWith("consumer.during-rebalance@"));
  }

  /**
   * Makes the group move partitions away from the static members: the dynamic member leaves cleanly
   * (its partitions go to them) and starts again (it takes some back: a revocation). Its crash
   * restarts alone may never do that: a member that comes back within the session timeout gets its
   * predecessor's partitions from the sticky assignor and nobody else's move.
   */
  private void nudgeRebalance() {
    fleet.children().stream()
        .filter(c -> c.name().equals(DYNAMIC_MEMBER) && c.alive())
        .findFirst()
        .ifPresent(c -> {
          log.note("rebalance-nudge", c.instance() + " restarted cleanly (SIGTERM)");
          Thread.ofPlatform()
              .name("rebalance-nudge")
              .start(() -> fleet.stop(c, "rebalance nudge", true));
        });
  }

  private boolean enoughFired(Scenario s) {
    Map<String, Integer> fired = log.fired();
    int min = settings.minFires();
    if (min > 0 && checker.committedIn(phase) < MIN_COMMITTED) {
      return false; // a phase in which (almost) nothing committed proves (almost) nothing
    }
    for (Fault f : s.external()) {
      if (fired.getOrDefault(f.kind, 0) < Math.min(min, 1)) {
        return false;
      }
    }
    if (s.external().isEmpty()) {
      return s.crashPoints().stream().allMatch(p -> fired.getOrDefault(p, 0) >= min);
    }
    return s.crashPoints().isEmpty()
        || s.crashPoints().stream().mapToInt(p -> fired.getOrDefault(p, 0)).sum() >= min;
  }

  private final Map<String, Integer> rotation = new java.util.concurrent.ConcurrentHashMap<>();

  private Optional<String> arm(
      Scenario s, Child c, Map<String, SplittableRandom> randoms, long scenarioSeed) {
    List<String> points =
        s.crashPoints().stream()
            .filter(p -> Scenario.roleOf(p) == c.role())
            // the dynamic member's restarts are what make the group revoke partitions: it is not
            // armed to wait for a revocation itself (all three could wait for each other)
            .filter(
                p -> !(p.equals("consumer.during-rebalance") && c.name().equals(DYNAMIC_MEMBER)))
            .toList();
    if (points.isEmpty()) {
      return Optional.empty();
    }
    SplittableRandom r;
    synchronized (randoms) {
      r = randoms.computeIfAbsent(c.name(), n -> new SplittableRandom(scenarioSeed ^ n.hashCode()));
    }
    synchronized (r) {
      if (r.nextDouble() >= s.armProbability()) {
        return Optional.empty();
      }
      // round robin from a seeded start, so every point of the role fires early and evenly
      int next = rotation.merge(c.name(), r.nextInt(points.size()), (a, b) -> a + 1);
      String p = points.get(next % points.size());
      return Optional.of(p + "@" + (1 + r.nextInt(Scenario.maxHits(p))));
    }
  }

  private void injectLoop(Fault f, SplittableRandom r, double spacing, AtomicBoolean stop) {
    boolean first = true;
    while (!stop.get()) {
      // the first fault of a kind comes early, so that even a short phase sees every kind
      long wait = (long) (interval(f, r) * spacing * (first ? 0.4 : 1.0));
      first = false;
      long until = System.nanoTime() + wait * 1_000_000;
      while (!stop.get() && System.nanoTime() < until) {
        sleep(100);
      }
      if (stop.get()) {
        return;
      }
      try {
        inject(f, r);
      } catch (RuntimeException e) {
        log.notFired(f.kind, "-", "failed: " + e);
      }
    }
  }

  private static long interval(Fault f, SplittableRandom r) {
    return switch (f) {
      case KILL_9 -> 500 + r.nextInt(1_000);
      case PAUSE_RELAY -> 300 + r.nextInt(700);
      case PAUSE_CONSUMER -> 500 + r.nextInt(1_000);
      case BROKER_RESTART -> 10_000 + r.nextInt(8_000);
      case POSTGRES_RESTART -> 6_000 + r.nextInt(4_000);
      case POSTGRES_CRASH -> 7_000 + r.nextInt(4_000);
      case POSTGRES_TERMINATE -> 1_000 + r.nextInt(1_500);
    };
  }

  // the database's faults take turns: a terminate or a crash never lands on a server that another
  // of them has down (it would neither fire nor prove anything)
  private final Object databaseFaults = new Object();

  private void inject(Fault f, SplittableRandom r) {
    if (f == Fault.POSTGRES_RESTART || f == Fault.POSTGRES_CRASH || f == Fault.POSTGRES_TERMINATE) {
      synchronized (databaseFaults) {
        injectDatabase(f);
      }
      return;
    }
    switch (f) {
      case KILL_9 -> {
        List<Child> targets =
            fleet.children().stream()
                .filter(c -> c.wanted() && !c.paused() && c.working())
                .toList();
        if (targets.isEmpty()) {
          log.note("kill-9-skipped", "no running process");
          return;
        }
        Child c = targets.get(r.nextInt(targets.size()));
        String who = c.toString();
        if (fleet.kill(c)) {
          log.fired(f.kind, who, "SIGKILL; process gone");
        } else {
          log.note("kill-9-skipped", who + " was not running any more");
        }
      }
      case PAUSE_RELAY, PAUSE_CONSUMER -> {
        Role role = f == Fault.PAUSE_RELAY ? Role.RELAY : Role.CONSUMER;
        long ms = role == Role.RELAY ? LEASE_MS + 1_500 : SESSION_MS + 2_500;
        List<Child> targets =
            fleet.children().stream()
                .filter(c -> c.role() == role && c.wanted() && !c.paused() && c.working())
                .toList();
        if (targets.isEmpty()) {
          log.note(f.kind + "-skipped", "no running process");
          return;
        }
        Child c = targets.get(r.nextInt(targets.size()));
        String who = c.toString();
        if (!fleet.pause(c)) {
          log.note(f.kind + "-skipped", who + " was not running any more");
          return;
        }
        long t0 = System.nanoTime();
        sleep(ms);
        long stoppedMs = (System.nanoTime() - t0) / 1_000_000;
        if (fleet.resume(c)) {
          log.fired(f.kind, who, "SIGSTOP for " + stoppedMs + " ms, then SIGCONT");
        } else {
          // it died while stopped (of an earlier fault's consequence, e.g. a start-up that
          // found PostgreSQL restarting): preempted, like an armed crash point ended by a kill
          log.note(f.kind + "-preempted", who + " was not alive at SIGCONT");
        }
      }
      case BROKER_RESTART -> {
        kafka.kill();
        boolean down = !kafka.isRunning();
        long t0 = System.nanoTime();
        ensureUp();
        if (down && kafka.isRunning()) {
          log.fired(
              f.kind,
              "kafka",
              "kill -9, back after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
        } else {
          log.notFired(f.kind, "kafka", "down=" + down + " running=" + kafka.isRunning());
        }
      }
      default -> throw new IllegalArgumentException(f + " is a database fault");
    }
  }

  private void injectDatabase(Fault f) {
    switch (f) {
      case POSTGRES_RESTART -> restartPostgres(f, pg::restart, "stopped (fast) and started");
      case POSTGRES_CRASH ->
          restartPostgres(
              f, pg::crash, "crashed (SIGKILL of every server process), recovered and started");
      case POSTGRES_TERMINATE -> {
        int n;
        try {
          n = pg.terminateBackends(ChildSupport.APPLICATION_PREFIX + "%");
        } catch (RuntimeException e) {
          if (postmasterStart().isPresent()) {
            throw e; // PostgreSQL is up: a terminate that failed did not fire
          }
          // another database fault (restart, crash) has it down: no session to terminate
          log.note(f.kind + "-skipped", "PostgreSQL is down (another database fault): " + e);
          return;
        }
        if (n > 0) {
          log.fired(f.kind, "postgres", n + " sessions of the processes terminated");
        } else {
          log.note(f.kind + "-skipped", "no session to terminate");
        }
      }
      default -> throw new IllegalArgumentException(f + " is not a database fault");
    }
  }

  /** Restarts PostgreSQL {@code how}; fired if its postmaster's start time moved on. */
  private void restartPostgres(Fault f, Runnable how, String what) {
    Optional<Instant> before = postmasterStart();
    if (before.isEmpty()) {
      // another database fault (a restart, a crash) has it down: this one comes next time
      log.note(f.kind + "-skipped", "PostgreSQL is down (another database fault)");
      return;
    }
    long t0 = System.nanoTime();
    try {
      how.run();
    } finally {
      ensureUp();
    }
    Optional<Instant> after = Optional.empty();
    for (int i = 0; i < 100 && after.isEmpty(); i++) {
      after = postmasterStart();
      if (after.isEmpty()) {
        sleep(100);
      }
    }
    if (before.isPresent() && after.isPresent() && after.get().isAfter(before.get())) {
      log.fired(
          f.kind,
          "postgres",
          what + ", back after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    } else {
      log.notFired(f.kind, "postgres", "start time before " + before + ", after " + after);
    }
  }

  /**
   * Starts PostgreSQL and the broker if they are down, retrying (a machine under load can take
   * longer than one start-up timeout).
   */
  private synchronized void ensureUp() {
    for (int attempt = 1; ; attempt++) {
      try {
        if (!pg.isRunning()) {
          pg.start();
        }
        if (!kafka.isRunning()) {
          kafka.start();
        }
        return;
      } catch (RuntimeException e) {
        log.note("start-retry", "attempt " + attempt + ": " + e.getMessage());
        if (attempt >= 5) {
          throw e;
        }
        if (kafka.isRunning()) {
          kafka.kill(); // a broker that did not become ready: start it afresh
        }
      }
    }
  }

  /**
   * Waits until the consumer group is stable with every consumer a member, so that a scenario's
   * time is spent on faults, not on the rebalance its re-armed processes started.
   */
  private void awaitGroupStable(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      try {
        ConsumerGroupDescription g =
            admin
                .describeConsumerGroups(List.of(GROUP))
                .describedGroups()
                .get(GROUP)
                .get(10, java.util.concurrent.TimeUnit.SECONDS);
        if (g.groupState() == GroupState.STABLE && g.members().size() == CONSUMERS) {
          return;
        }
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        // broker busy: ask again
      }
      Thread.sleep(200);
    }
    log.note("group-not-stable", "consumer group not stable after " + timeout + "; going on");
  }

  private Optional<Instant> postmasterStart() {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT pg_postmaster_start_time()")) {
      rs.next();
      Timestamp t = rs.getTimestamp(1);
      return Optional.of(t.toInstant());
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    if (fleet != null) {
      fleet.close();
    }
    if (reader != null) {
      reader.close();
    }
    if (admin != null) {
      admin.close(Duration.ofSeconds(2));
    }
    if (ds != null) {
      ds.close();
    }
    if (kafka != null) {
      kafka.close();
    }
    if (pg != null) {
      pg.close();
    }
    log.close();
  }
}
