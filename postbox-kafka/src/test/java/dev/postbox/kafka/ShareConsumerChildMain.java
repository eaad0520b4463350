package dev.postbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.PostgresInboxStore;
import java.time.Duration;

/**
 * An {@code EFFECTIVELY_ONCE} share-group consumer in its own JVM: args = jdbcUrl, bootstrap,
 * topic, group.
 */
public final class ShareConsumerChildMain {
  public static void main(String[] args) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(4);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      var sub = ShareGroupIT.effectivelyOnce(args[3], args[2]);
      try (KafkaShareSubscriber s =
          KafkaShareSubscriber.builder(args[1], sub)
              .inbox(PostgresInboxStore.create(ds))
              .lockDuration(ShareGroupIT.LOCK)
              .consumerProperty("max.poll.records", 5)
              .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d))
              .build()) {
        s.start();
        System.out.println("share consumer started");
        Thread.sleep(Duration.ofMinutes(5));
      }
    }
  }
}
