package dev.postbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresOffsetStore;
import java.time.Duration;

/**
 * An EFFECTIVELY_ONCE consumer keeping its offsets in PostgreSQL, in its own JVM: args = jdbcUrl,
 * bootstrap, topic, group.
 */
public final class OffsetConsumerChildMain {
  public static void main(String[] args) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(8);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      Subscription sub = OffsetsInPostgresIT.subscription(args[3], args[2]);
      try (KafkaSubscriber s =
          KafkaSubscriber.builder(args[1], sub)
              .offsetStore(PostgresOffsetStore.create(ds))
              // a dead member is noticed after 6 s, and the successor's join waits at most 10 s
              .consumerProperty("session.timeout.ms", 6000)
              .consumerProperty("max.poll.interval.ms", 10_000)
              .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d))
              .build()) {
        s.start();
        System.out.println("consumer started");
        Thread.sleep(Duration.ofMinutes(5));
      }
    }
  }
}
