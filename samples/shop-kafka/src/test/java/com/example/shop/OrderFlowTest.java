package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A user's test: the shop's order flow through Postbox against the test kit's embedded PostgreSQL
 * and Kafka broker. The schema comes migrated ({@code migrate = true}); the broker's jars are
 * fetched by the test kit when the local repository lacks them.
 */
@PostboxTest(migrate = true)
class OrderFlowTest {

  @Test
  void everyPlacedOrderIsShippedOnce(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic(Orders.TOPIC_BASE, 3);
    Orders orders = new Orders(ctx.dataSource(), topic);
    orders.createTable();
    try (Connection c = ctx.dataSource().getConnection()) {
      c.createStatement().execute("CREATE TABLE shipments (order_event text PRIMARY KEY)");
    }
    for (int i = 0; i < 20; i++) {
      orders.place("o-" + i, "customer-" + (i % 4), "sku-1", 1);
    }

    Subscription shipping =
        Subscription.builder("shipping")
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .build();
    try (Relay relay =
            Relay.builder(
                    PostgresRelayStore.create(ctx.dataSource()),
                    KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
                .build();
        KafkaSubscriber subscriber =
            KafkaSubscriber.builder(ctx.bootstrapServers(), shipping)
                .inbox(PostgresInboxStore.create(ctx.dataSource()))
                .handler(d -> {
                  try (PreparedStatement ps =
                      d.connection()
                          .orElseThrow()
                          .prepareStatement("INSERT INTO shipments (order_event) VALUES (?)")) {
                    ps.setString(1, d.message().id().toString());
                    ps.executeUpdate();
                  }
                })
                .build()) {
      relay.start();
      subscriber.start();
      await().atMost(Duration.ofMinutes(2)).until(() -> shipments(ctx) == 20);
      assertThat(subscriber.stats().applied()).isEqualTo(20);
    }
  }

  private static int shipments(PostboxTestContext ctx) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM shipments")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
