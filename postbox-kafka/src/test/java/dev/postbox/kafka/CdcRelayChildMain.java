package dev.postbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.cdc.CdcRelay;
import java.time.Duration;

/**
 * A CDC relay in its own JVM, so tests can kill it (kill -9 or a crash point): args = jdbcUrl,
 * bootstrap, instanceId, batchSize.
 */
public final class CdcRelayChildMain {
  public static void main(String[] args) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(4);
    try (HikariDataSource ds = new HikariDataSource(hc);
        CdcRelay relay =
            CdcRelay.builder(ds, args[0], KafkaRelayPublisher.builder(args[1]).build())
                .instanceId(args[2])
                .batchSize(Integer.parseInt(args[3]))
                .standbyRetryInterval(Duration.ofMillis(100))
                .leaseTtl(Duration.ofSeconds(3))
                .build()) {
      relay.start();
      System.out.println("cdc relay started");
      while (!relay.active()) {
        Thread.sleep(10);
      }
      System.out.println("cdc relay active");
      Thread.sleep(Duration.ofMinutes(5));
    }
  }
}
