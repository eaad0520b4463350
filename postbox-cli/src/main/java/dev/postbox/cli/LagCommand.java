package dev.postbox.cli;

import dev.postbox.admin.ConsumerLagSource;
import dev.postbox.admin.LagReport;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.core.consumer.QueueLag;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.PostgresConsumerAgeStore;
import dev.postbox.kafka.ConsumerLagProbe;
import dev.postbox.rabbitmq.RabbitLagProbe;
import dev.postbox.rabbitmq.RabbitTopology;
import java.util.List;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code postbox lag}: how stale each consumer is, as age. */
@Command(
    name = "lag",
    mixinStandardHelpOptions = true,
    description = {
      "Consumer lag as age: with --bootstrap-servers and --group, the age of the oldest record each"
          + " group has not finished per partition (Kafka, from committed offsets); with"
          + " --transport rabbitmq, --rabbitmq-uri, --subscription and --topic, the messages ready"
          + " and the consumers of each shard queue (RabbitMQ, from a passive queue.declare) and"
          + " the age of the oldest message not finished, as the subscribers report it to the"
          + " database (RabbitSubscriber ageStore; unknown, null, for a queue no instance"
          + " reported within 30 s); IDLE when nothing waits and nothing is unfinished, STALLED"
          + " when messages wait with no consumer or a message has been unfinished for 60 s or"
          + " more; always, per"
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

  /** Where the transport's lag is measured. */
  enum Transport {
    kafka,
    rabbitmq
  }

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--transport",
      defaultValue = "kafka",
      description = "kafka (default) or rabbitmq: where --group or --subscription is measured.")
  Transport transport;

  @Option(
      names = "--rabbitmq-uri",
      defaultValue = "${env:POSTBOX_RABBITMQ_URL}",
      description =
          "RabbitMQ broker, amqp://user:pass@host:5672/vhost (default: $POSTBOX_RABBITMQ_URL).")
  String rabbitUri;

  @Option(
      names = "--subscription",
      split = ",",
      description = "RabbitMQ subscriptions to measure (with --transport rabbitmq).")
  List<String> subscriptions = List.of();

  @Option(
      names = "--topic",
      split = ",",
      description = "Topics of those subscriptions (with --transport rabbitmq).")
  List<String> topics = List.of();

  @Option(
      names = "--shards",
      defaultValue = "" + RabbitTopology.DEFAULT_SHARDS,
      description = "Shard queues per topic of those subscriptions (default: ${DEFAULT-VALUE}).")
  int shards;

  @Option(
      names = "--json",
      description = "Print JSON: {partitions: [...], consumers: [...], queues: [...]}.")
  boolean json;

  @Override
  public Integer call() {
    if (transport == Transport.rabbitmq) {
      return rabbit();
    }
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

  private int rabbit() {
    if (rabbitUri == null || subscriptions.isEmpty() || topics.isEmpty()) {
      throw new picocli.CommandLine.ParameterException(
          spec.commandLine(),
          "--transport rabbitmq needs --rabbitmq-uri (or $POSTBOX_RABBITMQ_URL), --subscription"
              + " and --topic");
    }
    DataSource ds = db.dataSource();
    RabbitLagProbe.Builder b = RabbitLagProbe.builder(rabbitUri);
    subscriptions.forEach(s -> b.subscription(s, shards, topics.toArray(String[]::new)));
    try {
      b.ages(PostgresConsumerAgeStore.create(ds));
    } catch (OutboxException e) {
      System.err.println(
          "note: the oldest messages' ages are not shown: "
              + e.getMessage()
              + " (postbox_consumer_age, migration V21)");
    }
    try (RabbitLagProbe probe = b.build()) {
      PostboxAdmin admin = PostboxAdmin.builder(ds).queueLagSource(probe::read).build();
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
    if (!r.queues().isEmpty()) {
      System.out.printf(
          "%-20s %-20s %5s %8s %9s %18s %s%n",
          "SUBSCRIPTION", "TOPIC", "SHARD", "READY", "CONSUMERS", "OLDEST UNFINISHED", "");
      for (QueueLag q : r.queues()) {
        System.out.printf(
            "%-20s %-20s %5d %8d %9d %18s %s%n",
            q.subscription(),
            q.topic(),
            q.shard(),
            q.messagesReady(),
            q.consumers(),
            q.oldestUnfinishedAge().map(OutboxCommand::age).orElse("unknown"),
            q.stalled() ? "STALLED" : q.idle() ? "IDLE" : "");
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
