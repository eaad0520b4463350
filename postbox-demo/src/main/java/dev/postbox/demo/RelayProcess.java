package dev.postbox.demo;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * A relay as its own OS process (the way it runs in production: beside the service, or as a
 * sidecar). Arguments: JDBC URL (with the schema), Kafka bootstrap servers, instance id, lease TTL
 * in milliseconds. Runs until killed or terminated; SIGTERM closes it cleanly (marks the batch in
 * flight, releases its lanes).
 */
public final class RelayProcess {

  private RelayProcess() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println(
          "usage: RelayProcess <jdbc-url> <bootstrap-servers> <instance-id> [lease-ttl-ms]");
      System.exit(2);
    }
    Duration ttl = Duration.ofMillis(args.length > 3 ? Long.parseLong(args[3]) : 10_000);
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(4);
    hc.setPoolName("relay-" + args[2]);
    HikariDataSource ds = new HikariDataSource(hc);
    Relay relay =
        Relay.builder(PostgresRelayStore.create(ds), KafkaRelayPublisher.builder(args[1]).build())
            .instanceId(args[2])
            .leaseTtl(ttl)
            .pollInterval(Duration.ofMillis(250))
            .build();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              relay.close();
              ds.close();
              stopped.countDown();
            }));
    relay.start();
    System.out.println("relay " + args[2] + " started");
    stopped.await();
  }
}
