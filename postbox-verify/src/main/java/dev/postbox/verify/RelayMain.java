package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import java.time.Duration;

/**
 * A relay of the campaign, as its own OS process. Arguments: JDBC URL (with schema), bootstrap
 * servers (or an {@code amqp://} URI: RabbitMQ's relay publisher), instance id, lease TTL in ms,
 * batch size, the transactional relay's {@code transactional.id} prefix (empty or absent: the
 * idempotent relay), {@code cdc} to run the CDC relay instead (the lease TTL is then the slot
 * lease's) or empty, the RabbitMQ nodes' {@code host:port} comma-separated (a cluster: the
 * publisher's {@code addresses}) or empty or absent, and {@code failover-slot} (the CDC relay's
 * slot made a failover slot: a PostgreSQL pair) or absent. Prints {@code started} when running.
 */
public final class RelayMain {

  private RelayMain() {}

  public static void main(String[] args) throws Exception {
    String id = args[2];
    HikariDataSource ds = ChildSupport.dataSource(args[0], id, 3, "");
    if (args.length > 6 && args[6].equals("cdc")) {
      CdcRelay cdc =
          CdcRelay.builder(ds, args[0], publisher(args))
              .instanceId(id)
              .leaseTtl(Duration.ofMillis(Long.parseLong(args[3])))
              .batchSize(Integer.parseInt(args[4]))
              .standbyRetryInterval(Duration.ofMillis(200))
              .statusInterval(Duration.ofSeconds(2))
              .shutdownTimeout(Duration.ofSeconds(10))
              .failoverSlot(args.length > 8 && args[8].equals("failover-slot"))
              .build();
      cdc.start();
      System.out.println("relay " + id + " started (cdc)");
      ChildSupport.runUntilTerminated(() -> {
        cdc.close();
        ds.close();
      });
      return;
    }
    Relay relay =
        Relay.builder(PostgresRelayStore.create(ds), publisher(args))
            .instanceId(id)
            .leaseTtl(Duration.ofMillis(Long.parseLong(args[3])))
            .batchSize(Integer.parseInt(args[4]))
            .pollInterval(Duration.ofMillis(200))
            .shutdownTimeout(Duration.ofSeconds(10))
            .build();
    relay.start();
    System.out.println("relay " + id + " started");
    ChildSupport.runUntilTerminated(() -> {
      relay.close();
      ds.close();
    });
  }

  private static dev.postbox.core.spi.RelayPublisher publisher(String[] args) {
    if (args[1].startsWith("amqp")) {
      // the RabbitMQ campaign: confirms, mandatory
      RabbitRelayPublisher.Builder b =
          RabbitRelayPublisher.builder(args[1]).connectionName(args[2]);
      if (args.length > 7 && !args[7].isEmpty()) {
        b.addresses(java.util.List.of(args[7].split(",")));
      }
      return b.build();
    }
    KafkaRelayPublisher.Builder b =
        KafkaRelayPublisher.builder(args[1])
            .producerProperty("delivery.timeout.ms", 30_000)
            .producerProperty("request.timeout.ms", 10_000);
    if (args.length > 5 && !args[5].isEmpty()) {
      b.transactional(args[5]).transactionTimeout(Duration.ofSeconds(30));
    }
    return b.build();
  }
}
