package dev.postbox.demo;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code ./postbox demo} command. (The operator commands, {@code migrate} and {@code trace},
 * are in postbox-cli.)
 */
@Command(
    name = "postbox",
    mixinStandardHelpOptions = true,
    version = "postbox 0.1.0-SNAPSHOT",
    description = "Postbox: messaging that loses nothing and applies nothing twice.",
    subcommands = {PostboxCli.Demo.class})
public final class PostboxCli implements Runnable {

  public static void main(String[] args) {
    int code = new CommandLine(new PostboxCli()).execute(args);
    System.exit(code);
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }

  /**
   * {@code postbox demo}: the shop on embedded PostgreSQL and Kafka, with a relay crash and an
   * inventory crash.
   */
  @Command(
      name = "demo",
      mixinStandardHelpOptions = true,
      description = {
        "Runs the shop: orders + outbox in one transaction, relay processes (one killed between the broker ack"
            + " and the mark), a consumer; prints what was committed, published, missing and out of order.",
        "The inventory service consumes order.created effectively once (the relays publish each one twice;"
            + " its first process is killed between an effect's commit and its offset commit) and deducts"
            + " stock; the report checks one effect per order and the final stock.",
        "Poison messages (malformed JSON, an unknown schema version, orders of an unknown product) land in"
            + " the dead letters while other keys flow on; the missing product is added and those orders are"
            + " replayed, applied exactly once. A warehouse the inventory calls is down for a while: its"
            + " customers' orders are parked and drain in order afterwards.",
        "With --cluster the same shop runs on 3 Kafka brokers (replication factor 3,"
            + " min.insync.replicas=2) and a PostgreSQL primary with a synchronous standby (a commit"
            + " returns once the standby has flushed it, so a failover loses no acknowledged commit"
            + " and the invariants hold strictly); while the orders are placed, the leader of a"
            + " partition of the orders topic is killed (kill -9; started again later) and the"
            + " database fails over (kill -9 of the primary, the standby promoted). Kafka and the"
            + " polling relay only. The report adds cluster and faults (each fault's time and"
            + " recovery times).",
        "Exit code: 0 all invariants held, 1 an invariant broke, 3 inconclusive (no crash, or no cluster fault, fired)."
      })
  static final class Demo implements Callable<Integer> {
    @Option(
        names = "--orders",
        defaultValue = "8000",
        description = "Orders to place (default: ${DEFAULT-VALUE}).")
    int orders;

    @Option(
        names = "--customers",
        defaultValue = "200",
        description = "Customers = ordering keys (default: ${DEFAULT-VALUE}).")
    int customers;

    @Option(
        names = "--writers",
        defaultValue = "4",
        description = "Concurrent order writers (default: ${DEFAULT-VALUE}).")
    int writers;

    @Option(
        names = "--relays",
        defaultValue = "2",
        description = "Relay processes (default: ${DEFAULT-VALUE}).")
    int relays;

    @Option(
        names = "--backlog",
        defaultValue = "20000",
        description =
            "Events committed in one transaction and drained by the running relays, to measure relay throughput (default: ${DEFAULT-VALUE}; 0 skips).")
    int backlog;

    @Option(
        names = "--timeout",
        defaultValue = "PT3M",
        description =
            "Longest wait for the consumer, and for the inventory (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Option(
        names = "--crash-at-batch",
        defaultValue = "40",
        description =
            "The first relay halts between the broker ack and the mark at this batch"
                + " (default: ${DEFAULT-VALUE}; 0: no crash).")
    int crashAtBatch;

    @Option(
        names = "--consumer-crash-at",
        defaultValue = "300",
        description =
            "The first inventory process halts between an effect's commit and its offset commit at"
                + " this delivery of order.created (default: ${DEFAULT-VALUE}; 0: no crash).")
    int consumerCrashAt;

    @Option(
        names = "--outage-seconds",
        defaultValue = "20",
        description =
            "How long the warehouse (a dependency of wholesale orders) is down (default: ${DEFAULT-VALUE}; 0: no outage; at most 25).")
    int outageSeconds;

    @Option(
        names = "--metrics-port",
        defaultValue = "0",
        description =
            "Port of the Prometheus scrape endpoint served while the demo runs (default: a free"
                + " port; the URL is printed at start).")
    int metricsPort;

    @Option(
        names = "--transport",
        defaultValue = "kafka",
        description =
            "The broker: kafka or rabbitmq (a private RabbitMQ node from this machine's"
                + " rabbitmq-server, or POSTBOX_RABBITMQ_URL) (default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(
        names = "--relay",
        defaultValue = "polling",
        description =
            "The relay processes: polling (lanes, leases) or cdc (logical replication of the"
                + " outbox, one streaming, the others standing by) (default: ${DEFAULT-VALUE}).")
    String relay;

    @Option(
        names = "--outbox",
        defaultValue = "table",
        description =
            "Where the orders service writes order.created and the backlog: table (outbox rows) or"
                + " emit (pg_logical_emit_message, in the WAL only; needs --relay cdc)"
                + " (default: ${DEFAULT-VALUE}).")
    String outbox;

    @Option(
        names = "--cluster",
        description =
            "Run on 3 Kafka brokers and a PostgreSQL primary with a synchronous standby; kill a"
                + " partition leader and fail the database over mid-run (Kafka, polling relay).")
    boolean cluster;

    @Option(names = "--report-json", description = "Also write the report as JSON to this file.")
    Path reportJson;

    @Option(
        names = "--work-dir",
        defaultValue = ".postbox/demo",
        description = "Where relay and inventory logs go (default: ${DEFAULT-VALUE}).")
    Path workDir;

    @Override
    public Integer call() throws Exception {
      if (orders < 1
          || customers < 1
          || writers < 1
          || relays < 1
          || backlog < 0
          || crashAtBatch < 0
          || consumerCrashAt < 0
          || outageSeconds < 0
          || outageSeconds > 25) {
        throw new CommandLine.ParameterException(
            new CommandLine(this),
            "orders, customers, writers and relays must be >= 1; backlog, crash-at-batch and"
                + " consumer-crash-at >= 0; outage-seconds between 0 and 25 (the inventory's"
                + " parking tiers add up to 30 s; a longer outage dead-letters parked orders)");
      }
      ShopTransport.Kind kind;
      RelayMode mode;
      try {
        kind = ShopTransport.Kind.of(transport);
        mode = RelayMode.of(relay, outbox);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage());
      }
      ShopDemo demo;
      try {
        demo =
            new ShopDemo(
                new ShopDemo.Options(
                    orders,
                    customers,
                    writers,
                    relays,
                    backlog,
                    crashAtBatch,
                    consumerCrashAt,
                    timeout,
                    workDir,
                    outageSeconds,
                    metricsPort),
                System.out,
                kind,
                mode,
                cluster,
                Clock.systemUTC());
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage());
      }
      DemoReport report = demo.run();
      System.out.println();
      System.out.println(report.toText());
      if (reportJson != null) {
        report.writeJson(reportJson);
        System.out.println("report written to " + reportJson);
      }
      return report.ok() ? 0 : report.inconclusive() ? 3 : 1;
    }
  }
}
