package dev.postbox.rabbitmq;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.jdbc.PostgresRelayStore;
import java.time.Duration;

/**
 * The orders service in its own JVM, so a test can halt it at a crash point: its reply subscriber,
 * then {@code count} orders each written with its durable request in one transaction, then its
 * relay. Args: jdbcUrl, AMQP uri, request topic, reply topic, reply subscription, count, relay
 * instance id.
 */
public final class DurableOrdersChildMain {
  public static void main(String[] args) throws Exception {
    String uri = args[1];
    String requestTopic = args[2];
    String replyTopic = args[3];
    int count = Integer.parseInt(args[5]);
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(args[0]);
    hc.setMaximumPoolSize(6);
    DurableRequests payments = RabbitRequester.durableRequests(replyTopic);
    try (HikariDataSource ds = new HikariDataSource(hc);
        RabbitSubscriber replies =
            DurableOrders.replySubscriber(uri, ds, payments, replyTopic, args[4]);
        Relay relay =
            Relay.builder(
                    PostgresRelayStore.create(ds),
                    RabbitRelayPublisher.builder(uri)
                        .confirmTimeout(Duration.ofSeconds(10))
                        .build())
                .instanceId(args[6])
                .leaseTtl(Duration.ofSeconds(2))
                .pollInterval(Duration.ofMillis(200))
                .build()) {
      replies.start();
      System.out.println("replies subscribed");
      for (int i = 0; i < count; i++) {
        DurableOrders.order(ds, payments, requestTopic, "order-" + i);
      }
      System.out.println("committed " + count);
      relay.start();
      System.out.println("relay started");
      Thread.sleep(Duration.ofMinutes(5)); // until the test stops it (or a crash point halts it)
    }
  }
}
