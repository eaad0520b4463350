package dev.postbox.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./postbox bench [--quick] [--report-json FILE] [--report-md FILE]}: runs the side-by-side
 * benchmarks and prints the Markdown table (figure, baseline measured in the same run, ratio,
 * target, met). {@code --jmh} runs the JMH micro-benchmarks (codec, envelope mapping) instead. Exit
 * code 0 after a complete run (targets missed do not change it), 1 if a benchmark failed, 3 if a
 * full run's relay figure fell, against its baseline in the run, below the committed previous
 * report by more than the run's spread ({@link RelayRegressionCheck}).
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description =
        "Side-by-side benchmarks: relay, outbox writes, consumers, end-to-end latency, key"
            + " concurrency and heap, against the physical limits and peers, in one run.")
public final class BenchCli implements Callable<Integer> {

  @Option(names = "--quick", description = "Small sizes (CI, ~2-3 minutes).")
  boolean quick;

  @Option(names = "--report-json", paramLabel = "FILE", description = "Also write the JSON report.")
  Optional<Path> reportJson = Optional.empty();

  @Option(
      names = "--report-md",
      paramLabel = "FILE",
      description = "Also write the Markdown table.")
  Optional<Path> reportMd = Optional.empty();

  @Option(
      names = "--only",
      split = ",",
      paramLabel = "GROUP",
      description =
          "Run only these groups: relay, write, consumer, redis, e2e (end to end, commit to"
              + " effect committed: the polling relay to an at-least-once consumer at 1k, 5k, 20k/s,"
              + " then the race of the CDC relay and the polling relay to our effectively-once batch"
              + " consumer against Debezium to Spring Kafka's batch listener, and with RabbitMQ"
              + " installed the polling relay to our effectively-once consumer on RabbitMQ against"
              + " the same relay to Spring AMQP's batch listener), keys, heap; and, only"
              + " when named, latency (only e2e's first part, without the race), txrelay (transactional vs idempotent relay), cdc (CDC relay vs"
              + " Debezium: pre-written backlog, commit to broker-ack latency at fixed rates),"
              + " rabbitmq (RabbitMQ relay and consumers; 1, 2 and 4 instances sharing the shards by"
              + " lease against Spring AMQP's competing consumers; shard hand-over times), admin (operations queries on 100,000"
              + " dead letters), rr (request/reply round trips on Kafka and RabbitMQ beside a bare"
              + " client echo), batchrace (only the consumer group's race of our batch consumer"
              + " against Spring Kafka's batch listener), acklatency (only cdc's commit to"
              + " broker-ack latency race: CDC relay, Debezium, polling relay), cdcwrite (only"
              + " cdc's write path: business-only, table outbox, emit-message outbox),"
              + " ackrounds (the CDC relay and Debezium in three alternating rounds at 1k, 2k, 5k,"
              + " half and a quarter of the writers' maximum: each p99 the median of its"
              + " rounds), inboxkeys (PostgreSQL's CPU per message of an inbox batch claim"
              + " with the keys of schema version 15 and 16, one and twelve connections), capacity"
              + " (WAL bytes, table size and dead tuples per event: business write, table and"
              + " emit-message outbox, relay delete or mark, inbox record, purge and vacuum) and"
              + " cluster (a 3-broker Kafka cluster, replication factor 3, min.insync.replicas=2,"
              + " acks=all, beside the single broker in one run: relay with 1, 2 and 4 instances,"
              + " effectively-once batch consumer, commit to broker-ack latency at 1,000/s; three"
              + " more broker JVMs, so never part of the default run).")
  java.util.List<String> only = BenchRunner.GROUPS;

  @Option(
      names = "--previous-report",
      paramLabel = "FILE",
      description =
          "The committed previous full report that a full run's relay figures are checked against"
              + " (default: ${DEFAULT-VALUE}); the run exits 3 if one fell beyond its spread.")
  Path previousReport = Path.of("docs/benchmarks-full.json");

  @Option(
      names = "--jmh",
      description =
          "Run the JMH micro-benchmarks (codec, envelope mapping; 1 fork, 3 x 1 s warm-up, 5 x 1 s).")
  boolean jmh;

  public static void main(String[] args) {
    int code = new CommandLine(new BenchCli()).execute(args);
    System.exit(code);
  }

  @Override
  public Integer call() throws Exception {
    if (jmh) {
      org.openjdk.jmh.Main.main(
          new String[] {
            "dev.postbox.bench.jmh", "-f", "1", "-wi", "3", "-w", "1s", "-i", "5", "-r", "1s"
          });
      return 0;
    }
    BenchReport report =
        new BenchRunner(
                quick ? BenchConfig.quickMode() : BenchConfig.fullMode(),
                System.err,
                java.util.Set.copyOf(only))
            .run();
    String md = report.toMarkdown() + "\n" + report.notesMarkdown();
    System.out.println();
    System.out.print(md);
    if (reportJson.isPresent()) {
      Files.writeString(reportJson.get(), report.toJson());
    }
    if (reportMd.isPresent()) {
      Files.writeString(reportMd.get(), md);
    }
    return checkRelay(report);
  }

  /** Prints the relay check's lines; the exit code: 3 if a relay figure regressed, else 0. */
  private int checkRelay(BenchReport report) throws java.io.IOException {
    if (report.quick() || report.get(RelayRegressionCheck.FIGURES.get(0)).isEmpty()) {
      return 0;
    }
    Optional<RelayRegressionCheck> check = RelayRegressionCheck.read(previousReport);
    if (check.isEmpty()) {
      System.err.println(
          "relay check: no previous report at " + previousReport + "; relay figures not compared");
      return 0;
    }
    java.util.List<String> regressed = new java.util.ArrayList<>();
    for (RelayRegressionCheck.Finding f : check.get().compare(report)) {
      System.err.println(f.line(previousReport));
      if (f.regressed()) {
        regressed.add(f.figure());
      }
    }
    if (regressed.isEmpty()) {
      return 0;
    }
    System.err.println(
        "BENCH FAILED: relay throughput regressed beyond this run's spread against "
            + previousReport
            + ": "
            + String.join(", ", regressed));
    return RelayRegressionCheck.EXIT_REGRESSED;
  }
}
