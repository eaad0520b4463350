package dev.postbox.verify;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./postbox verify}: the fault-injection campaign. Exit code 0 when every scenario passed, 1
 * on a violation (a dead letter is one), 3 when inconclusive (a scheduled fault did not fire, the
 * offset audit took no sample or checked no record, nothing parked in the parking scenario), 2 on a
 * usage error.
 */
@Command(
    name = "verify",
    mixinStandardHelpOptions = true,
    subcommands = LedgerCommand.class,
    description = {
      "Runs PostgreSQL, a Kafka broker, 2 producers, 2 relays and 3 consumers as separate processes,"
          + " injects crash points, kill -9, SIGSTOP pauses, broker restarts, PostgreSQL restarts"
          + " and crashes (also under ordered parking), heals, drains and checks the history"
          + " (nothing lost, nothing dead-lettered, nothing applied twice, per-key order, offsets,"
          + " zombies, recovery time). Exit code 0 when every scenario passed, 1 on a violation, 3"
          + " when inconclusive (a scheduled fault did not fire, no offset sample, nothing parked"
          + " in the parking scenario...), 2 on a usage error. --scenarios request-reply runs the"
          + " request/reply scenario alone (responder and requester crash points); with"
          + " --transport rabbitmq, on RabbitMQ. --scenarios"
          + " transform (run only when named): consume-transform-produce transformers halted"
          + " before their Kafka commit and killed -9, outputs checked read_committed."
          + " --cluster: on a three-broker KRaft cluster (partition leaders killed and frozen, the"
          + " active controller killed, rolling restarts) and a PostgreSQL primary with a synchronous"
          + " standby (the primary killed, the standby promoted)."
    })
public final class VerifyCli implements Callable<Integer> {

  /** Held so that its level sticks (java.util.logging keeps loggers weakly). */
  private static final java.util.logging.Logger FLYWAY_LOG =
      java.util.logging.Logger.getLogger("org.flywaydb");

  @Option(
      names = "--quick",
      description =
          "One short round of every scenario (a few minutes; what CI runs): a scenario goes on"
              + " (up to 6 times its phase) until each of its crash points fired twice and each"
              + " of its other faults once.")
  boolean quick;

  @Option(
      names = "--seed",
      description = "Seed of the load and the fault schedule (default: random).")
  Long seed;

  @Option(names = "--report-json", description = "Also write the report as JSON to this file.")
  Path reportJson;

  @Option(
      names = "--injections",
      description =
          "Keep running rounds of the scenarios until this many faults fired (default: 2000; 0"
              + " with --quick).")
  Long injections;

  @Option(
      names = "--phase-seconds",
      description =
          "How long each scenario injects faults per round (default: 25 with --quick, else 90; crash-point scenarios get 1.6 times as long).")
  Integer phaseSeconds;

  @Option(names = "--rounds", description = "At least this many rounds (default 1).")
  int rounds = 1;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--fault-rate",
      description =
          "Inject the external faults (kill -9, pauses, broker and PostgreSQL restarts, killed"
              + " sessions, partitions) this many times as often as by default (above 0, at most"
              + " 10; default 1). Crash points fire as fast as the processes restart either way.")
  double faultRate = 1;

  @Option(
      names = "--max-minutes",
      description =
          "Start no scenario round after this many minutes (default: no limit): a long campaign"
              + " fits a time box and still reports every round it ran.")
  Integer maxMinutes;

  @Option(
      names = "--rate",
      description = "Business transactions per second of the producers together (default: 40).")
  double rate = 40;

  @Option(
      names = "--recovery-bound-seconds",
      description = "Longest allowed time from the heal until everything is applied (default 120).")
  int recoveryBoundSeconds = 120;

  @Option(
      names = "--relay",
      description =
          "Which relay the relay processes run: idempotent (default) or transactional (one"
              + " transactional producer per lane; a stale publish, counted from the relay epoch"
              + " header, is then a violation). E.g. --relay transactional --scenarios"
              + " pauses,kill-9,relay-crash-points. Or cdc: the CDC relay (one streams the"
              + " replication slot, one stands by) with its own scenarios: cdc-crash-points,"
              + " kill-9, standby-takeover, pauses, postgres-restart.")
  String relay = "idempotent";

  @Option(
      names = "--consumer-mode",
      description =
          "How the consumer processes apply records: inbox (default: EFFECTIVELY_ONCE, an inbox"
              + " row per message) or offsets (each partition's next offset kept in PostgreSQL in"
              + " the effect's transaction, postbox_consumer_offset; partition order; the offset"
              + " audit also checks the stored offsets; the parking scenario is left out). E.g."
              + " --consumer-mode offsets --scenarios consumer-crash-points,kill-9. With"
              + " --transport rabbitmq: inbox (single active consumer per shard queue) or"
              + " shard-leases (three instances share the shard queues through leases in"
              + " PostgreSQL).")
  String consumerMode = "inbox";

  @Option(
      names = "--transport",
      defaultValue = "kafka",
      description =
          "kafka (the default campaign) or rabbitmq: the RabbitMQ campaign (relay and consumer crash"
              + " points, kill -9, a consumer frozen past its heartbeat, dropped connections, broker"
              + " kill -9) on a private RabbitMQ node, or POSTBOX_RABBITMQ_URL; --scenarios"
              + " partitions (only when named, root, the command's own node): a relay cut off"
              + " from PostgreSQL and a consumer cut off from RabbitMQ. With --relay cdc its relays"
              + " are CDC relays and rabbitmq-cdc-crash-points replaces rabbitmq-relay-crash-points;"
              + " --relay transactional is refused.")
  String transport = "kafka";

  @Option(
      names = "--cluster",
      description =
          "Run on a three-broker Kafka cluster (KRaft, each broker also a controller; replication"
              + " factor 3, min.insync.replicas=2, no unclean leader election; every client given"
              + " every broker's address) with the scenarios cluster-leader-kill (kill -9 of the"
              + " broker leading a partition of the topic, restarted), cluster-leader-freeze"
              + " (SIGSTOP of that leader past its session timeout, then SIGCONT),"
              + " cluster-controller-kill (kill -9 of the active controller, restarted),"
              + " cluster-rolling-restart (each broker stopped and started in turn) and"
              + " cluster-isr-below-min (every partition's in-sync replicas below"
              + " min.insync.replicas for 6 s: the topic's minimum raised to 3 and a broker"
              + " killed, then the broker back and the minimum 2 again), cluster-broker-cut-off"
              + " (a broker cut off from the other brokers and the controller quorum for 25 s"
              + " while clients still reach it, every other time the consumers' group coordinator,"
              + " else a partition's leader; each broker in its own network namespace,"
              + " root only, inconclusive elsewhere) and postgres-failover"
              + " (PostgreSQL runs as a primary with a synchronous streaming standby, every"
              + " client given both with targetServerType=primary: kill -9 of the primary, the"
              + " standby promoted, the former primary rebuilt as its standby), then the"
              + " processes' own faults (mixed kills a leader in place of the broker restart, and fails"
              + " PostgreSQL over too); the"
              + " single broker's broker-restart and partitions, and redis-window and transform"
              + " (each on its own single broker), do not run; request-reply runs only when named,"
              + " on its own broker and a PostgreSQL pair failed over while requests flow. With --transport"
              + " rabbitmq: on a three-node RabbitMQ cluster from this machine's rabbitmq-server"
              + " (every client given every node's address) and a PostgreSQL pair as with Kafka,"
              + " with the scenarios cluster-node-kill (kill -9 of the node holding a shard queue's"
              + " quorum leader, restarted), cluster-rolling-restart (each node stopped cleanly and"
              + " started again in turn, the next once every shard queue has all its members"
              + " online), cluster-node-cut-off (the node holding a shard queue's quorum leader cut"
              + " off from the other nodes for 10 s while clients still reach it: it pauses, as"
              + " pause_minority has it; each node then runs in its own network namespace, which"
              + " needs root, else the scenario is INCONCLUSIVE, not run) and postgres-failover,"
              + " and the processes' own faults; the single node's faults (connection-drops, broker-kill,"
              + " broker-kill-backlog, partitions) do not run.")
  boolean cluster;

  @Option(
      names = "--async-standby",
      description =
          "With --cluster: PostgreSQL's standby is asynchronous instead of synchronous, so a"
              + " failover can lose the last commits the primary acknowledged. The producers"
              + " journal every acknowledged commit outside the database, and the checker reports"
              + " the commits PostgreSQL lost (pg-lost, measured) apart from the events Postbox"
              + " lost (lost, a violation); with the synchronous default pg-lost is a violation.")
  boolean asyncStandby;

  @Option(
      names = "--scenarios",
      split = ",",
      description =
          "Only these scenarios (default: all). 'partitions' (a relay cut off from PostgreSQL, a"
              + " consumer cut off from the broker, in network namespaces; needs root and iproute2)"
              + " runs only when named; without root it reports itself inconclusive. 'transform'"
              + " (KafkaTransformer processes halted at consumer.transform-before-transaction-commit"
              + " and killed -9 while inputs, some poison, are written; each input's outputs"
              + " exactly once read_committed, per-key order, poison dead-lettered once) runs only"
              + " when named.")
  List<String> scenarios = List.of();

  @Option(
      names = "--dir",
      description =
          "Report directory: fault log, process logs, data (default: target/verify/<time>-<seed>).")
  Path dir;

  /** The settings of {@code --quick} with the defaults (what CI runs). */
  static Campaign.Settings quickSettings(long seed, Path dir) {
    VerifyCli cli = new VerifyCli();
    cli.quick = true;
    return cli.settings(seed, dir);
  }

  Campaign.Settings settings(long s, Path d) {
    return new Campaign.Settings(
        s,
        Duration.ofSeconds(phaseSeconds != null ? phaseSeconds : quick ? 25 : 90),
        rounds,
        injections != null ? injections : quick ? 0 : 2000,
        Duration.ofSeconds(recoveryBoundSeconds),
        rate,
        scenarios,
        d.toAbsolutePath(),
        quick ? 2 : 1,
        RelayMode.parse(relay),
        ConsumerMode.parse(consumerMode),
        faultRate,
        Duration.ofMinutes(maxMinutes != null ? maxMinutes : 0),
        cluster,
        asyncStandby);
  }

  public static void main(String[] args) {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
      // the harness's own clients see every broker restart; that is expected, not news
      System.setProperty("org.slf4j.simpleLogger.log.org.apache.kafka", "error");
      // a postgres-crash leaves the embedded server's handle to a dead server: closing it logs
      // that pg_ctl could not stop it, which is the point
      System.setProperty(
          "org.slf4j.simpleLogger.log.io.zonky.test.db.postgres.embedded.EmbeddedPostgres", "off");
    }
    FLYWAY_LOG.setLevel(java.util.logging.Level.WARNING);
    System.exit(new CommandLine(new VerifyCli()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (!(faultRate > 0 && faultRate <= Campaign.Settings.MAX_FAULT_RATE)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--fault-rate: above 0 and at most "
              + Campaign.Settings.MAX_FAULT_RATE
              + ", not "
              + faultRate);
    }
    if (maxMinutes != null && maxMinutes <= 0) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--max-minutes: a positive number, not " + maxMinutes);
    }
    if (transport.equalsIgnoreCase("rabbitmq")
        && RelayMode.parse(relay) == RelayMode.TRANSACTIONAL) {
      // refused rather than run with another relay under a name that says otherwise
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--relay transactional with --transport rabbitmq: Kafka transactions are Kafka's; the"
              + " RabbitMQ campaign runs the polling relay (default) or --relay cdc");
    }
    if (!ConsumerMode.parse(consumerMode).runsOn(transport)) {
      // refused rather than run in another mode under a name that says otherwise
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--consumer-mode "
              + consumerMode
              + " with --transport "
              + transport
              + ": Kafka's campaign runs inbox or offsets, RabbitMQ's inbox or shard-leases");
    }
    checkScenarioNames();
    checkClusterScenarios();
    if (asyncStandby && !cluster) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--async-standby: only with --cluster (the PostgreSQL pair)");
    }
    // the code and tree as they are when the run starts (the report is written at its end)
    RunRecord provenance = runRecord();
    long s =
        seed != null ? seed : Math.abs(new java.security.SecureRandom().nextLong() % 1_000_000);
    Instant started = Instant.now();
    Path d =
        dir != null
            ? dir
            : Path.of(
                "target",
                "verify",
                DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")
                        .withZone(ZoneOffset.UTC)
                        .format(started)
                    + "-"
                    + s);
    Campaign.Settings settings = settings(s, d);
    if (transport.equalsIgnoreCase("rabbitmq")) {
      // on RabbitMQ request-reply runs only when named (not in a run of every scenario)
      boolean rr = scenarios.contains(REQUEST_REPLY);
      List<String> others = scenarios.stream().filter(n -> !n.equals(REQUEST_REPLY)).toList();
      int code = Report.OK;
      if (!rr || !others.isEmpty()) {
        code =
            RabbitVerify.run(
                settings.withOnly(others),
                quick,
                cluster,
                started,
                reportJson,
                provenance,
                System.out);
      }
      return rr ? requestReply(s, d.resolve("rabbitmq"), code, true) : code;
    }
    if (!transport.equalsIgnoreCase("kafka")) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--transport: kafka or rabbitmq, not " + transport);
    }
    // each on its own single broker: not part of a run on the cluster
    boolean redisWindow = !cluster && (scenarios.isEmpty() || scenarios.contains(REDIS_WINDOW));
    // on the cluster only when named: on a PostgreSQL pair failed over while requests flow
    boolean requestReply = scenarios.contains(REQUEST_REPLY) || (!cluster && scenarios.isEmpty());
    // run only when named: its own broker, transformers and checker
    boolean transform = scenarios.contains(TRANSFORM);
    java.util.Set<String> ownRuns = java.util.Set.of(REDIS_WINDOW, REQUEST_REPLY, TRANSFORM);
    if (!scenarios.isEmpty() && scenarios.stream().allMatch(ownRuns::contains)) {
      // the campaign's own scenarios are not asked for
      int code = redisWindow ? redisWindow(s, d, Report.OK, provenance) : Report.OK;
      code = requestReply ? requestReply(s, d, code, false) : code;
      return transform ? transform(s, d, code) : code;
    }
    settings = settings.withOnly(scenarios.stream().filter(n -> !ownRuns.contains(n)).toList());
    Report report;
    try (Campaign campaign = new Campaign(settings, System.out)) {
      List<ScenarioResult> results =
          campaign.run(sofar -> {
            // the report so far, rewritten after each scenario (a stopped campaign keeps it)
            Report partial =
                new Report(s, sofar, started, Duration.between(started, Instant.now()));
            try (java.io.PrintStream ps =
                new java.io.PrintStream(d.resolve("report-so-far.txt").toFile(), "UTF-8")) {
              partial.printText(ps);
              partial.writeJson(d.resolve("report-so-far.json"));
            } catch (java.io.IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          });
      report =
          new Report(s, results, started, Duration.between(started, Instant.now()))
              .withRecord(provenance, d.resolve("faults.log"));
    }
    report.printText(System.out);
    report.writeJson(d.resolve("report.json"));
    if (reportJson != null) {
      report.writeJson(reportJson);
    }
    System.out.println("fault log and process logs: " + d.toAbsolutePath());
    int code = redisWindow ? redisWindow(s, d, report.exitCode(), provenance) : report.exitCode();
    code = requestReply ? requestReply(s, d, code, false) : code;
    return transform ? transform(s, d, code) : code;
  }

  /** This run's provenance for its JSON report (see {@link RunRecord}). */
  private RunRecord runRecord() {
    List<String> args =
        spec == null ? List.of() : spec.commandLine().getParseResult().originalArgs();
    return RunRecord.of(args, transport, relay, consumerMode, cluster);
  }

  /**
   * Refuses (exit 2) a {@code --scenarios} name that this transport and relay do not run: a typo or
   * a scenario of another campaign would otherwise run nothing and report OK.
   */
  private void checkScenarioNames() {
    java.util.Set<String> known = scenarioNames(transport, RelayMode.parse(relay));
    List<String> unknown = scenarios.stream().filter(n -> !known.contains(n)).toList();
    if (!unknown.isEmpty()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--scenarios: "
              + String.join(", ", unknown)
              + (unknown.size() == 1 ? " is" : " are")
              + " not a scenario of the "
              + transport
              + " campaign with --relay "
              + relay
              + "; its scenarios: "
              + String.join(", ", known));
    }
  }

  /**
   * Refuses (exit 2) the cluster's scenarios without {@code --cluster}, and a single node's (or
   * single broker's) scenarios with it: either would run nothing under a name that says otherwise.
   */
  void checkClusterScenarios() {
    if (!transport.equalsIgnoreCase("rabbitmq")) {
      checkKafkaClusterScenarios();
      return;
    }
    for (RabbitCampaign.RabbitScenario r : RabbitCampaign.all(RelayMode.parse(relay))) {
      String shortName = r.name().substring(RabbitCampaign.PREFIX.length());
      if (!scenarios.contains(r.name()) && !scenarios.contains(shortName)) {
        continue;
      }
      boolean clusterOnly = r.external().stream().anyMatch(RabbitCampaign.CLUSTER_ONLY::contains);
      boolean singleNode = r.external().stream().anyMatch(RabbitCampaign.SINGLE_NODE::contains);
      if (clusterOnly && !cluster) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "--scenarios: " + shortName + " runs only with --cluster");
      }
      if (singleNode && cluster) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--scenarios: " + shortName + " is a single node's scenario; not with --cluster");
      }
    }
  }

  /** As {@link #checkClusterScenarios()} for the Kafka campaign. */
  private void checkKafkaClusterScenarios() {
    java.util.Set<String> onCluster = new java.util.TreeSet<>();
    Scenario.all(RelayMode.parse(relay), true).forEach(sc -> onCluster.add(sc.name()));
    for (String name : scenarios) {
      boolean clusterOnly =
          Scenario.clusterScenarios().stream().anyMatch(sc -> sc.name().equals(name));
      if (clusterOnly && !cluster) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "--scenarios: " + name + " runs only with --cluster");
      }
      if (cluster && !onCluster.contains(name) && !name.equals(REQUEST_REPLY)) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--scenarios: "
                + name
                + " is a single broker's scenario; not with --cluster (its scenarios there: "
                + String.join(", ", onCluster)
                + ")");
      }
    }
  }

  /** Every name {@code --scenarios} accepts on {@code transport} with {@code relay}. */
  static java.util.Set<String> scenarioNames(String transport, RelayMode relay) {
    java.util.Set<String> names = new java.util.LinkedHashSet<>();
    if (transport.equalsIgnoreCase("rabbitmq")) {
      for (RabbitCampaign.RabbitScenario r : RabbitCampaign.all(relay)) {
        names.add(r.name());
        names.add(r.name().substring(RabbitCampaign.PREFIX.length()));
      }
      names.add(REQUEST_REPLY);
      return names;
    }
    Scenario.all(relay).forEach(sc -> names.add(sc.name()));
    Scenario.clusterScenarios().forEach(sc -> names.add(sc.name()));
    Scenario.optional().forEach(sc -> names.add(sc.name()));
    names.add(REDIS_WINDOW);
    names.add(REQUEST_REPLY);
    names.add(TRANSFORM);
    return names;
  }

  /** The scenario name of {@link TransformScenario} (run when named; its own JSON file). */
  static final String TRANSFORM = TransformScenario.NAME;

  /** Runs the transform scenario; returns the exit code combined with {@code campaignExit}. */
  private int transform(long s, Path d, int campaignExit) throws Exception {
    TransformScenario.Result r =
        new TransformScenario(s, d.toAbsolutePath().resolve(TRANSFORM), System.out)
            .run(
                quick ? 3_000 : 20_000,
                rate * 2,
                quick ? 2 : 5,
                Duration.ofSeconds(quick ? 240 : 900));
    TransformScenario.print(r, System.out);
    new com.fasterxml.jackson.databind.ObjectMapper()
        .writerWithDefaultPrettyPrinter()
        .writeValue(d.resolve(TRANSFORM + ".json").toFile(), r);
    if (campaignExit == Report.VIOLATION || r.violations() > 0) {
      return Report.VIOLATION;
    }
    return campaignExit == Report.INCONCLUSIVE || r.inconclusive()
        ? Report.INCONCLUSIVE
        : campaignExit;
  }

  /** The scenario name of {@link RequestReplyScenario} (its own report section and JSON file). */
  static final String REQUEST_REPLY = RequestReplyScenario.NAME;

  /**
   * Runs the request-reply scenario (on RabbitMQ with {@code rabbitmq}); returns the exit code
   * combined with {@code campaignExit}.
   */
  private int requestReply(long s, Path d, int campaignExit, boolean rabbitmq) throws Exception {
    java.nio.file.Files.createDirectories(d);
    RequestReplyScenario.Result r =
        new RequestReplyScenario(s, d.toAbsolutePath().resolve(REQUEST_REPLY), System.out, rabbitmq)
            // with --cluster: on a PostgreSQL pair, failed over while requests flow
            .failovers(cluster ? (quick ? 2 : 5) : 0)
            .run(quick ? 300 : 2_000, quick ? 2 : 5, Duration.ofSeconds(30));
    RequestReplyScenario.print(r, System.out);
    new com.fasterxml.jackson.databind.ObjectMapper()
        .writerWithDefaultPrettyPrinter()
        .writeValue(d.resolve(REQUEST_REPLY + ".json").toFile(), r);
    if (campaignExit == Report.VIOLATION || r.violations() > 0) {
      return Report.VIOLATION;
    }
    return campaignExit == Report.INCONCLUSIVE || r.inconclusive()
        ? Report.INCONCLUSIVE
        : campaignExit;
  }

  /** The scenario name of {@link RedisWindow} (its own report section and JSON file). */
  static final String REDIS_WINDOW = "redis-window";

  /** Runs the redis-window scenario; returns the exit code combined with {@code campaignExit}. */
  private int redisWindow(long s, Path d, int campaignExit, RunRecord provenance) throws Exception {
    Path windowDir = d.toAbsolutePath().resolve(REDIS_WINDOW);
    Instant started = Instant.now();
    Optional<RedisWindow.Result> r =
        new RedisWindow(s, windowDir, System.out).run(quick ? 1_000 : 3_000, quick ? 5 : 20);
    if (r.isEmpty()) {
      // skipped (no redis-server, no POSTBOX_REDIS_URL): nothing was checked, so nothing is proven
      System.out.println("redis-window: INCONCLUSIVE: skipped, the Redis mode was not checked");
      return campaignExit == Report.VIOLATION ? Report.VIOLATION : Report.INCONCLUSIVE;
    }
    RedisWindow.print(r.get(), System.out);
    new com.fasterxml.jackson.databind.ObjectMapper()
        .writerWithDefaultPrettyPrinter()
        .writeValue(d.resolve(REDIS_WINDOW + ".json").toFile(), r.get());
    // its own run report, judged and counted by the ledger like a campaign's (consumer mode redis),
    // with the provenance taken when the run started
    new Report(
            s,
            List.of(RedisWindow.asScenario(r.get())),
            started,
            Duration.between(started, Instant.now()))
        .withRecord(
            provenance.withMode("kafka", "direct", "redis", false),
            windowDir.resolve(RedisWindow.FAULT_LOG))
        .writeJson(windowDir.resolve("report.json"));
    System.out.println("redis-window: run report " + windowDir.resolve("report.json"));
    if (campaignExit == Report.VIOLATION || r.get().violations() > 0) {
      return Report.VIOLATION;
    }
    return campaignExit == Report.INCONCLUSIVE || r.get().inconclusive()
        ? Report.INCONCLUSIVE
        : campaignExit;
  }
}
