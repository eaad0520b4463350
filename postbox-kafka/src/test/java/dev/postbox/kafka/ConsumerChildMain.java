package dev.postbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresInboxStore;
import java.time.Duration;

/** An EFFECTIVELY_ONCE consumer in its own JVM: args = jdbcUrl, bootstrap, topic, group. */
public final class ConsumerChildMain {
  public static void main(String[] args) throws Exception {
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(8);
    try (HikariDataSource ds = new HikariDataSource(hc)) {
      Subscription sub =
          Subscription.builder(args[3])
              .topics(args[2])
              .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
              .build();
      try (KafkaSubscriber s =
          KafkaSubscriber.builder(args[1], sub)
              .inbox(PostgresInboxStore.create(ds))
              // a dead member is noticed after 6 s (the broker's minimum), not Kafka's default 45 s
              .consumerProperty("session.timeout.ms", 6000)
              .handler(d -> Effects.apply(d.connection().orElseThrow(), sub.name(), d))
              .build()) {
        s.start();
        System.out.println("consumer started");
        Thread.sleep(Duration.ofMinutes(5));
      }
    }
  }
}
