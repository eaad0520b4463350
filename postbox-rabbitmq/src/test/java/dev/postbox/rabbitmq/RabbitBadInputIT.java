package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.codec.EventTypes;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * Bad input on a real RabbitMQ node, each kind into the dead letters with its reason and its body
 * as sent: a delivery without CloudEvents properties, a body that does not decode as its type, a
 * tenant the subscription does not allow; good messages around them are applied.
 */
@PostboxTest
class RabbitBadInputIT {

  /** The payload of {@code order.created}. */
  record OrderCreated(String sku, int quantity) {}

  @Test
  void eachKindOfBadInputIsDeadLetteredWithItsReason(PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    PostboxMigrations.migrate(ctx.dataSource());
    DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
    String topic = "bad-" + UUID.randomUUID();
    Set<String> applied = ConcurrentHashMap.newKeySet();
    Subscription sub =
        Subscription.builder("bad-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(topic)
            .eventTypes(
                EventTypes.builder().register("order.created", 1, OrderCreated.class).build())
            .allowedTenants(Set.of("acme"))
            .build();
    try (RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(1)
            .deadLetters(store)
            .handler(d -> applied.add(d.event(OrderCreated.class).sku()))
            .build()) {
      s.start();
      Map<String, byte[]> bodies = new HashMap<>();
      ConnectionFactory f = new ConnectionFactory();
      f.setUri(server.uri());
      try (Connection c = f.newConnection();
          Channel ch = c.createChannel()) {
        // confirms: a broker is free to drop a message published without them on a channel closed
        // at once (a CI run lost one this way), which would fail the test as a timeout much later
        ch.confirmSelect();
        byte[] plain = "just text".getBytes(StandardCharsets.UTF_8);
        ch.basicPublish(
            topic,
            "k1",
            new AMQP.BasicProperties.Builder().contentType("text/plain").build(),
            plain);
        bodies.put("not-cloudevents", plain);
        Message malformed = order(topic, "k2", "acme", "{not json");
        Message forged = order(topic, "k3", "evil", "{\"sku\":\"forged\",\"quantity\":1}");
        Message good = order(topic, "k4", "acme", "{\"sku\":\"good\",\"quantity\":1}");
        for (Message m : List.of(malformed, forged, good)) {
          ch.basicPublish(
              topic, m.key().orElseThrow(), RabbitMessages.toProperties(m), m.payload().bytes());
        }
        bodies.put("malformed", malformed.payload().bytes());
        bodies.put("forged", forged.payload().bytes());
        ch.waitForConfirmsOrDie(30_000);
      }
      // at least three, then exactly three: a fourth (one dead-lettered twice, or the good one)
      // fails below with what was stored, not as a timeout
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> store.query(DeadLetterStore.Query.all(10)).size() >= 3);
      await().atMost(Duration.ofSeconds(60)).until(() -> applied.contains("good"));
      List<DeadLetterStore.DeadLetter> stored = store.query(DeadLetterStore.Query.all(10));
      assertThat(stored)
          .as(
              "dead letters (key: reason): %s",
              stored.stream()
                  .map(dl ->
                      new String(dl.letter().key(), StandardCharsets.UTF_8)
                          + ": "
                          + dl.letter().errorMessage())
                  .toList())
          .hasSize(3);
      Map<String, NewDeadLetter> byKey = new HashMap<>();
      for (DeadLetterStore.DeadLetter dl : stored) {
        byKey.put(new String(dl.letter().key(), StandardCharsets.UTF_8), dl.letter());
      }
      assertThat(byKey.get("k1").errorMessage()).contains("cloudEvents_specversion");
      assertThat(byKey.get("k1").value()).isEqualTo(bodies.get("not-cloudevents"));
      assertThat(byKey.get("k2").value()).isEqualTo(bodies.get("malformed"));
      assertThat(byKey.get("k2").errorClass()).contains("Decoding");
      assertThat(byKey.get("k3").value()).isEqualTo(bodies.get("forged"));
      assertThat(byKey.get("k3").errorMessage())
          .contains("not allowed")
          .as(
              "the tenant's value is not copied into the reason (issue 19: no header values in logs)")
          .doesNotContain("evil");
      assertThat(byKey.values())
          .allSatisfy(l -> {
            assertThat(l.classification()).isEqualTo(Classification.PERMANENT);
            assertThat(l.attempts()).isEqualTo(1);
          });
      assertThat(applied).containsExactly("good");
    }
  }

  private static Message order(String topic, String key, String tenant, String json) {
    return Message.builder(topic, "order.created")
        .key(key)
        .tenant(tenant)
        .jsonPayload(json)
        .build();
  }
}
