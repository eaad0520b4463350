package dev.postbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import java.time.Duration;

/**
 * A relay in its own JVM, so tests can kill it at a crash point: args = jdbcUrl, bootstrap,
 * instanceId, and optionally the transactional relay's {@code transactional.id} prefix.
 */
public final class RelayChildMain {
  public static void main(String[] args) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(4);
    try (HikariDataSource ds = new HikariDataSource(hc);
        Relay relay =
            Relay.builder(PostgresRelayStore.create(ds), publisher(args))
                .instanceId(args[2])
                .batchSize(50)
                .leaseTtl(Duration.ofSeconds(2))
                .pollInterval(Duration.ofMillis(200))
                .build()) {
      relay.start();
      System.out.println("relay started");
      Thread.sleep(Duration.ofMinutes(5));
    }
  }

  private static KafkaRelayPublisher publisher(String[] args) {
    KafkaRelayPublisher.Builder b = KafkaRelayPublisher.builder(args[1]);
    return (args.length > 3 ? b.transactional(args[3]) : b).build();
  }
}
