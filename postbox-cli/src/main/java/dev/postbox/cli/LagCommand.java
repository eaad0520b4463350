package dev.postbox.cli;

import dev.postbox.admin.ConsumerLagSource;
import dev.postbox.admin.LagReport;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.kafka.ConsumerLagProbe;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code postbox lag}: how stale each consumer is, as age. */
@Command(
    name = "lag",
    mixinStandardHelpOptions = true,
    description = {
      "Consumer lag as age: with --bootstrap-servers and --group, the age of the oldest record each"
          + " group has not finished per partition (Kafka, from committed offsets); always, per"
          + " consumer, the pending dead letters and parked keys with their oldest ages.",
      "Exit code: 0."
    })
final class LagCommand implements Callable<Integer> {

  @Mixin AdminOptions db = new AdminOptions();

  @Option(
      names = "--bootstrap-servers",
      defaultValue = "${env:POSTBOX_KAFKA_BOOTSTRAP}",
      description = "Kafka brokers (default: $POSTBOX_KAFKA_BOOTSTRAP).")
  String bootstrap;

  @Option(names = "--group", split = ",", description = "Consumer groups to measure in Kafka.")
  List<String> groups = List.of();

  @Option(names = "--json", description = "Print JSON: {partitions: [...], consumers: [...]}.")
  boolean json;

  @Override
  public Integer call() {
    if (bootstrap == null || groups.isEmpty()) {
      return print(db.admin().lag());
    }
    try (ConsumerLagProbe probe =
        ConsumerLagProbe.builder(bootstrap).groups(groups.toArray(String[]::new)).build()) {
      ConsumerLagSource source =
          () ->
              probe.read().stream()
                  .map(p ->
                      new ConsumerLagSource.PartitionLag(
                          p.group(),
                          p.topic(),
                          p.partition(),
                          p.offsetLag(),
                          p.oldestUnprocessedAge()))
                  .toList();
      PostboxAdmin admin = PostboxAdmin.builder(db.dataSource()).lagSource(source).build();
      return print(admin.lag());
    }
  }

  private int print(LagReport r) {
    if (json) {
      Json.print(r, System.out);
      return ExitCodes.OK;
    }
    if (!r.partitions().isEmpty()) {
      System.out.printf(
          "%-20s %-20s %4s %10s %s%n",
          "GROUP", "TOPIC", "PART", "OFFSET LAG", "OLDEST UNPROCESSED");
      for (ConsumerLagSource.PartitionLag p : r.partitions()) {
        System.out.printf(
            "%-20s %-20s %4d %10d %s%n",
            p.group(),
            p.topic(),
            p.partition(),
            p.offsetLag(),
            OutboxCommand.age(p.oldestUnprocessedAge()));
      }
    }
    System.out.printf(
        "%-20s %14s %18s %12s %18s%n",
        "CONSUMER", "DEAD LETTERS", "OLDEST", "PARKED KEYS", "OLDEST PARKED");
    for (LagReport.Backlog b : r.consumers()) {
      System.out.printf(
          "%-20s %14d %18s %12d %18s%n",
          b.consumer(),
          b.deadLettersPending(),
          OutboxCommand.age(b.oldestDeadLetterAge()),
          b.parkedKeys(),
          OutboxCommand.age(b.oldestParkedAge()));
    }
    return ExitCodes.OK;
  }
}
