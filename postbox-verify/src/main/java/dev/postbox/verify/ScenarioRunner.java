package dev.postbox.verify;

import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import dev.postbox.verify.Scenario.Fault;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.common.GroupState;

/**
 * Runs one scenario round on the campaign's environment: re-arms the processes the scenario arms,
 * starts the producers, runs one injector thread per external fault (process, broker or database
 * faults) for the phase, heals everything, waits for the drain and checks the whole history.
 */
final class ScenarioRunner {

  // how often a phase whose consumer waits for a revocation nudges the group (after a quarter)
  private static final Duration NUDGE_INTERVAL = Duration.ofSeconds(20);
  // with minFires, a phase also goes on until this many business transactions committed in it
  private static final int MIN_COMMITTED = 50;

  private final Campaign.Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private final CampaignEnvironment env;
  private final Fleet fleet;
  private final HistoryChecker checker;
  private final Admin admin;
  private final ProcessFaults processFaults;
  private final BrokerFaults brokerFaults;
  private final DatabaseFaults databaseFaults;
  private final PartitionFaults partitionFaults;
  private final KafkaClusterFaults clusterFaults;

  /** A runner on {@code env}, which must be started. */
  ScenarioRunner(
      Campaign.Settings settings, PrintStream out, FaultLog log, CampaignEnvironment env) {
    this.settings = settings;
    this.out = out;
    this.log = log;
    this.env = env;
    this.fleet = env.fleet();
    this.checker = env.checker();
    this.admin = env.admin();
    this.processFaults = new ProcessFaults(fleet, log, env::cdcSlotOwner);
    this.brokerFaults = new BrokerFaults(env, log);
    this.databaseFaults = new DatabaseFaults(env, log);
    this.partitionFaults = new PartitionFaults(env, log);
    this.clusterFaults = new KafkaClusterFaults(env, log);
  }

  /** Runs one round of {@code s}: arm, inject, heal, drain, check. */
  ScenarioResult run(Scenario s, int round) throws Exception {
    if (s.partitions() && env.network().isEmpty()) {
      String why = env.networkUnavailable().orElse("no network namespaces");
      out.println(s.name() + ": INCONCLUSIVE, not run: " + why);
      return notRun(s, why);
    }
    if (s.external().contains(Fault.CLUSTER_BROKER_CUT_OFF)
        && env.brokersUnreachable().isPresent()) {
      String why = env.brokersUnreachable().get();
      out.println(s.name() + ": INCONCLUSIVE, not run: " + why);
      return notRun(s, why);
    }
    int phase = env.nextPhase();
    log.beginScenario(s.name() + "#" + round);
    long scenarioSeed = settings.seed() ^ (s.name().hashCode() * 0x9E3779B97F4A7C15L) ^ round;
    Map<String, SplittableRandom> armRandoms = new TreeMap<>();
    rotation.clear();
    databaseGate.reset();
    killGate.reset();
    clusterGate.reset();
    fleet.armer(c -> arm(s, c, armRandoms, scenarioSeed));
    // re-arm the running processes whose role this scenario arms; restart the consumers if the
    // scenario turns parking on or off
    boolean parkingChanges = env.consumerParking() != s.parking();
    env.consumerParking(s.parking());
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
    env.producers().forEach(fleet::want);
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> injectors = startInjectors(s, scenarioSeed, stop);
    long start = runPhase(s);
    reportIfStalled(start);
    stop.set(true);
    for (Thread t : injectors) {
      t.join();
    }
    heal();
    Drain drain = drain();
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
        drain.recoveryMs(),
        !drain.drained(),
        log.unexpectedExits(),
        reasons);
  }

  /** The group's description and each consumer's state, into the fault log and the output. */
  private void dumpConsumers() {
    List<Path> files = new ArrayList<>();
    for (int i = 1; i <= Campaign.CONSUMERS; i++) {
      files.add(env.stateFile("consumer-" + i));
    }
    diagnostics("drain-diagnostics", DrainDiagnostics.describe(admin, Campaign.GROUP, files));
  }

  /**
   * If fewer than {@link #MIN_COMMITTED} business transactions committed in the phase begun at
   * {@code start}: why, while it is still stalled (the producers and the busy database sessions).
   */
  private void reportIfStalled(long start) {
    java.util.OptionalLong committed = checker.committedIn(env.phase());
    if (committed.isPresent() && committed.getAsLong() >= MIN_COMMITTED) {
      return;
    }
    List<String> lines = new ArrayList<>();
    lines.add(
        "phase stalled: "
            + (committed.isPresent()
                ? committed.getAsLong() + " business transactions committed"
                : "PostgreSQL cannot count the business transactions committed now")
            + " in "
            + (System.nanoTime() - start) / 1_000_000_000
            + " s");
    lines.addAll(StallDiagnostics.describe(env.producers(), env.dataSource()));
    diagnostics("stall-diagnostics", lines);
  }

  /** Diagnostic lines, into the fault log (as {@code kind}) and the output. */
  private void diagnostics(String kind, List<String> lines) {
    for (String line : lines) {
      log.note(kind, line);
      out.println("  " + line);
    }
    out.flush();
  }

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
        .filter(c -> c.name().equals(Campaign.DYNAMIC_MEMBER) && c.alive())
        .findFirst()
        .ifPresent(c -> {
          log.note("rebalance-nudge", c.instance() + " restarted cleanly (SIGTERM)");
          Thread.ofPlatform()
              .name("rebalance-nudge")
              .start(() -> fleet.stop(c, "rebalance nudge", true));
        });
  }

  /** How the drain after the heal went: how long it took from the heal, and whether in bound. */
  private record Drain(long recoveryMs, boolean drained) {}

  /**
   * Waits until everything committed is applied, up to the recovery bound (and as long again past
   * it, a violation, so that the checks see the end).
   */
  private Drain drain() throws InterruptedException {
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
    return new Drain(recoveryMs, drained);
  }

  /** Starts one injector thread per external fault of {@code s} (and the parking's failures). */
  private List<Thread> startInjectors(Scenario s, long scenarioSeed, AtomicBoolean stop) {
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
          Thread.ofPlatform().name("transient-failures").start(() -> env.failures().run(r, stop)));
    }
    return injectors;
  }

  /**
   * The phase itself, while the injectors run: its time, extended while a fault it schedules has
   * not fired or too little committed; samples the committed offsets and nudges a stuck rebalance.
   * Returns when it started ({@link System#nanoTime()}).
   */
  private long runPhase(Scenario s) throws InterruptedException {
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
    boolean extended = false;
    while (System.nanoTime() < end || (System.nanoTime() < latest && !enoughFired(s))) {
      if (!extended && System.nanoTime() - end >= 0) {
        extended = true;
        // asked once: what it waits for may have come since the loop's own check
        List<String> waitingFor = notEnoughFired(s);
        if (!waitingFor.isEmpty()) {
          out.println(
              "  "
                  + s.name()
                  + ": phase goes on past "
                  + phaseTime.toSeconds()
                  + " s (up to "
                  + (latest - start) / 1_000_000_000L
                  + " s): "
                  + String.join(", ", waitingFor));
          out.flush();
        }
      }
      // sample the committed offsets all through the faults (the injectors never wait for it)
      checker.auditOffsets();
      if (System.nanoTime() - nextNudge >= 0 && waitingForRevocation()) {
        nudgeRebalance();
        nextNudge = System.nanoTime() + NUDGE_INTERVAL.toNanos();
      }
      Thread.sleep(500);
    }
    return start;
  }

  /**
   * The heal: the network whole again, no more arming, the producers stopped, every armed or dead
   * process restarted unarmed, the servers up and every process started.
   */
  private void heal() throws InterruptedException {
    partitionFaults.healAll();
    // heal: no more arming, producer stopped, armed processes restarted unarmed, servers up
    fleet.armer(c -> Optional.empty());
    for (Child p : env.producers()) {
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
    env.ensureUp();
    fleet.awaitStarted(Duration.ofMinutes(3));
  }

  /** Whether every fault {@code s} schedules fired {@code minFires} times (mixed: see below). */
  private boolean enoughFired(Scenario s) {
    return notEnoughFired(s).isEmpty();
  }

  /** What the phase still waits for before it may end (empty: nothing). */
  private List<String> notEnoughFired(Scenario s) {
    Map<String, Integer> fired = log.fired();
    int min = settings.minFires();
    List<String> missing = new ArrayList<>();
    java.util.OptionalLong committed = checker.committedIn(env.phase());
    if (min > 0 && committed.isEmpty()) {
      // PostgreSQL does not answer now (a database fault): no count, and no reason to end yet
      missing.add("business transactions committed: cannot count now (PostgreSQL does not answer)");
    } else if (min > 0 && committed.getAsLong() < MIN_COMMITTED) {
      // a phase in which (almost) nothing committed proves (almost) nothing
      missing.add(
          committed.getAsLong() + " of " + MIN_COMMITTED + " business transactions committed");
    }
    for (Fault f : s.external()) {
      if (fired.getOrDefault(f.kind, 0) < Math.min(min, 1)) {
        missing.add(f.kind + " not fired");
      }
    }
    if (s.external().isEmpty()) {
      s.crashPoints().stream()
          .filter(p -> fired.getOrDefault(p, 0) < min)
          .forEach(p -> missing.add(p + " fired " + fired.getOrDefault(p, 0) + " of " + min));
    } else if (!s.crashPoints().isEmpty()) {
      int sum = s.crashPoints().stream().mapToInt(p -> fired.getOrDefault(p, 0)).sum();
      if (sum < min) {
        missing.add("crash points fired " + sum + " of " + min);
      }
    }
    return missing;
  }

  private final Map<String, Integer> rotation = new java.util.concurrent.ConcurrentHashMap<>();

  private Optional<String> arm(
      Scenario s, Child c, Map<String, SplittableRandom> randoms, long scenarioSeed) {
    List<String> points =
        s.crashPoints().stream()
            .filter(p -> Scenario.roleOf(p) == c.role())
            // the dynamic member's restarts are what make the group revoke partitions: it is not
            // armed to wait for a revocation itself (all three could wait for each other)
            .filter(p ->
                !(p.equals("consumer.during-rebalance")
                    && c.name().equals(Campaign.DYNAMIC_MEMBER)))
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
      long wait = settings.spaced((long) (interval(f, r) * spacing * (first ? 0.4 : 1.0)));
      first = false;
      long until = System.nanoTime() + wait * 1_000_000;
      while (!stop.get() && System.nanoTime() < until) {
        Campaign.sleep(100);
      }
      if (stop.get() || !awaitProgressFor(f, stop)) {
        return;
      }
      try {
        inject(f, r);
      } catch (RuntimeException e) {
        log.notFired(f.kind, "-", "failed: " + e);
      }
    }
  }

  /**
   * Before a database fault, a {@code kill -9} or a cluster's fault: waits at its {@link
   * ProgressGate} until some business transaction of the phase committed since the previous fault
   * of the same gate in the round. On a slow machine, restarts, crashes and killed sessions spaced
   * for a fast one left no transaction committing between them, and the phase proved nothing
   * (inconclusive); and kills every 0.2-0.5 s (at a high {@code --fault-rate}) kept both producers
   * down most of the phase, so hundreds of kills were counted over a few dozen transactions. Other
   * faults are not gated. Returns false if stopped while waiting.
   */
  private boolean awaitProgressFor(Fault f, AtomicBoolean stop) {
    ProgressGate gate =
        Scenario.DATABASE_FAULTS.contains(f)
            ? databaseGate
            : f == Fault.KILL_9
                ? killGate
                : Scenario.CLUSTER_FAULTS.contains(f) ? clusterGate : null;
    return gate == null || gate.await(stop::get);
  }

  /** The phase's committed business transactions so far. */
  /**
   * The phase's committed business transactions, -1 when PostgreSQL cannot answer (no gate passes).
   */
  private long committedInPhase() {
    return checker.committedIn(env.phase()).orElse(-1);
  }

  /** Database faults (restarts, crashes, killed sessions) wait here for progress. */
  private final ProgressGate databaseGate = new ProgressGate(this::committedInPhase, Thread::sleep);

  /** Each {@code kill -9} waits here for progress. */
  private final ProgressGate killGate = new ProgressGate(this::committedInPhase, Thread::sleep);

  /** Each cluster fault (a broker killed, frozen or restarted) waits here for progress. */
  private final ProgressGate clusterGate = new ProgressGate(this::committedInPhase, Thread::sleep);

  private static long interval(Fault f, SplittableRandom r) {
    return switch (f) {
      case KILL_9 -> 500 + r.nextInt(1_000);
      case KILL_ACTIVE_RELAY -> 4_000 + r.nextInt(3_000);
      case PAUSE_RELAY -> 300 + r.nextInt(700);
      case PAUSE_CONSUMER -> 500 + r.nextInt(1_000);
      case BROKER_RESTART -> 10_000 + r.nextInt(8_000);
      case POSTGRES_RESTART -> 6_000 + r.nextInt(4_000);
      case POSTGRES_CRASH -> 7_000 + r.nextInt(4_000);
      case POSTGRES_TERMINATE -> 1_000 + r.nextInt(1_500);
      case PARTITION_RELAY_POSTGRES, PARTITION_CONSUMER_KAFKA -> 3_000 + r.nextInt(4_000);
      // after the broker is back (each fault waits for that itself)
      case CLUSTER_LEADER_KILL, CLUSTER_CONTROLLER_KILL -> 6_000 + r.nextInt(4_000);
      case CLUSTER_LEADER_FREEZE -> 6_000 + r.nextInt(4_000);
      case CLUSTER_ROLLING_RESTART -> 5_000 + r.nextInt(3_000);
      case CLUSTER_ISR_BELOW_MIN -> 6_000 + r.nextInt(4_000);
      case CLUSTER_BROKER_CUT_OFF -> 6_000 + r.nextInt(4_000);
      case POSTGRES_FAILOVER -> 6_000 + r.nextInt(4_000);
    };
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
                .describeConsumerGroups(List.of(Campaign.GROUP))
                .describedGroups()
                .get(Campaign.GROUP)
                .get(10, java.util.concurrent.TimeUnit.SECONDS);
        if (g.groupState() == GroupState.STABLE && g.members().size() == Campaign.CONSUMERS) {
          return;
        }
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        // broker busy: ask again
      }
      Thread.sleep(200);
    }
    log.note("group-not-stable", "consumer group not stable after " + timeout + "; going on");
  }

  private void inject(Fault f, SplittableRandom r) {
    switch (f) {
      case POSTGRES_RESTART, POSTGRES_CRASH, POSTGRES_TERMINATE, POSTGRES_FAILOVER ->
          databaseFaults.inject(f);
      case KILL_9 -> processFaults.kill(f, r);
      case KILL_ACTIVE_RELAY -> processFaults.killActiveRelay(f);
      case PAUSE_RELAY, PAUSE_CONSUMER -> processFaults.pause(f, r);
      case BROKER_RESTART -> brokerFaults.restart(f);
      case PARTITION_RELAY_POSTGRES, PARTITION_CONSUMER_KAFKA -> partitionFaults.inject(f, r);
      case CLUSTER_LEADER_KILL,
          CLUSTER_LEADER_FREEZE,
          CLUSTER_CONTROLLER_KILL,
          CLUSTER_ROLLING_RESTART,
          CLUSTER_ISR_BELOW_MIN ->
          clusterFaults.inject(f, r);
    }
  }

  /** The result of a scenario that could not run here: inconclusive, for {@code why}. */
  static ScenarioResult notRun(Scenario s, String why) {
    return ScenarioResult.notRun(s.name(), why);
  }
}
