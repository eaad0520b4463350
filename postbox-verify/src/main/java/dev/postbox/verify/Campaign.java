package dev.postbox.verify;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A fault-injection campaign: PostgreSQL (its own process, synchronous commit on), a Kafka broker
 * (its own JVM; with {@code --cluster} three, see {@link KafkaClusterFaults}), two producer
 * application instances, two relays and three consumers (each its own JVM, restarted by a
 * supervisor after each death), and the scenarios run one after the other on that system. Each
 * scenario: start the producer, inject its faults for a while, heal everything, drain, and check
 * the whole history, counting what the scenario's business transactions show.
 *
 * <p>This class runs the rounds; the system is a {@link CampaignEnvironment}, one round of a
 * scenario a {@link ScenarioRunner}, and the faults are injected by {@link ProcessFaults}, {@link
 * BrokerFaults}, {@link KafkaClusterFaults} and {@link DatabaseFaults}.
 *
 * <p>Not thread-safe; run one campaign at a time.
 */
final class Campaign implements AutoCloseable {

  /**
   * How a campaign runs.
   *
   * @param faultRate how many times as often as by default the external faults are injected (the
   *     intervals between them divided by it; crash points are not affected: they fire as fast as
   *     the processes restart); 1 by default
   * @param timeBox no scenario round starts after the campaign has run this long ({@link
   *     Duration#ZERO}: no limit); a long campaign then fits a given time and keeps its report
   * @param cluster whether the campaign runs on the test kit's three-broker cluster ({@code
   *     --cluster}) instead of one broker
   */
  record Settings(
      long seed,
      Duration phase,
      int minRounds,
      long targetInjections,
      Duration recoveryBound,
      double rate,
      List<String> only,
      Path dir,
      int minFires,
      RelayMode relay,
      ConsumerMode consumerMode,
      double faultRate,
      Duration timeBox,
      boolean cluster,
      boolean asyncStandby) {

    /** The highest {@link #faultRate}. */
    static final double MAX_FAULT_RATE = 10;

    Settings {
      checkFaultRate(faultRate);
      if (timeBox.isNegative()) {
        throw new IllegalArgumentException("time box must not be negative: " + timeBox);
      }
      if (asyncStandby && !cluster) {
        throw new IllegalArgumentException("an asynchronous standby needs --cluster (a pair)");
      }
    }

    /** These settings with only the scenarios {@code names} (all if empty). */
    Settings withOnly(List<String> names) {
      return new Settings(
          seed,
          phase,
          minRounds,
          targetInjections,
          recoveryBound,
          rate,
          List.copyOf(names),
          dir,
          minFires,
          relay,
          consumerMode,
          faultRate,
          timeBox,
          cluster,
          asyncStandby);
    }

    /** These settings on the three-broker cluster ({@code cluster}) or on one broker. */
    Settings withCluster(boolean cluster) {
      return new Settings(
          seed,
          phase,
          minRounds,
          targetInjections,
          recoveryBound,
          rate,
          only,
          dir,
          minFires,
          relay,
          consumerMode,
          faultRate,
          timeBox,
          cluster,
          asyncStandby);
    }

    /** The wait before the next external fault, for the default wait {@code ms}. */
    long spaced(long ms) {
      return Campaign.spaced(ms, faultRate);
    }

    /** Fails unless {@code faultRate} is above 0 and at most {@link #MAX_FAULT_RATE}. */
    static void checkFaultRate(double faultRate) {
      if (!(faultRate > 0 && faultRate <= MAX_FAULT_RATE)) {
        throw new IllegalArgumentException(
            "fault rate must be above 0 and at most " + MAX_FAULT_RATE + ", not " + faultRate);
      }
    }
  }

  /**
   * The wait before the next external fault at {@code faultRate} times the default rate, for the
   * default wait {@code ms} (the Kafka and the RabbitMQ campaigns space their faults alike).
   */
  static long spaced(long ms, double faultRate) {
    return Math.round(ms / faultRate);
  }

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

  private final Settings settings;
  private final PrintStream out;
  private final FaultLog log;
  private final CampaignEnvironment env;

  Campaign(Settings settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
    this.log = new FaultLog(settings.dir().resolve("faults.log"));
    this.env = new CampaignEnvironment(settings, out, log);
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
    List<Scenario> scenarios =
        Scenario.selected(settings.relay(), settings.cluster(), settings.only());
    if (settings.consumerMode() == ConsumerMode.OFFSETS) {
      // ordered parking needs the inbox: an offsets-mode subscription refuses it
      scenarios.stream()
          .filter(Scenario::parking)
          .forEach(s ->
              out.println(
                  s.name()
                      + ": not run with --consumer-mode offsets (parking"
                      + " needs the inbox)"));
      scenarios = scenarios.stream().filter(s -> !s.parking()).toList();
    }
    if (!scenarios.isEmpty() && scenarios.stream().allMatch(Scenario::partitions)) {
      java.util.Optional<String> noNetwork = NetworkPartitions.unavailable();
      if (noNetwork.isPresent()) {
        // nothing else to run: report it without starting the servers and the fleet
        List<ScenarioResult> notRun = new java.util.ArrayList<>();
        for (Scenario s : scenarios) {
          out.println(s.name() + ": INCONCLUSIVE, not run: " + noNetwork.get());
          notRun.add(ScenarioRunner.notRun(s, noNetwork.get()));
        }
        progress.accept(List.copyOf(notRun));
        return List.copyOf(notRun);
      }
    }
    env.start();
    ScenarioRunner runner = new ScenarioRunner(settings, out, log, env);
    return CampaignRounds.of(settings).run(scenarios, Scenario::name, runner::run, out, progress);
  }

  /** Sleeps, keeping the interrupt flag if interrupted. */
  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    env.close();
    log.close();
  }
}
