package dev.postbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import java.time.Duration;

/**
 * A relay in its own JVM, so tests can kill it at a crash point: args = jdbcUrl, bootstrap,
 * instanceId.
 */
public final class RelayChildMain {
  public static void main(String[] args) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(4);
    try (HikariDataSource ds = new HikariDataSource(hc);
        Relay relay =
            Relay.builder(
                    PostgresRelayStore.create(ds), KafkaRelayPublisher.builder(args[1]).build())
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
}
