package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.LongStringHelper;
import dev.postbox.core.Message;
import dev.postbox.core.codec.EventTypes;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 2 on RabbitMQ: a delivery carrying text PostgreSQL cannot hold (NUL in the tenant,
 * the source or a header name, invalid UTF-8 in the tenant) is dead-lettered with its headers kept
 * byte for byte, and its key goes on: every good message of the same key after it is applied and
 * every delivery is acknowledged. On the code before the fix, the dead-letter insert was refused
 * ("invalid byte sequence for encoding UTF8: 0x00") and retried forever on the key's lane, so the
 * key's later messages were never applied.
 */
@PostboxTest
class RabbitUnstorableTextIT {

  private static final String KEY = "k";

  /** The payload of {@code order.created}. */
  record OrderCreated(String sku, int quantity) {}

  @Test
  void aDeliveryWithNulTextIsDeadLetteredLosslesslyAndItsKeyGoesOn(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    PostboxMigrations.migrate(ctx.dataSource());
    DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
    String topic = "unstorable-" + UUID.randomUUID();
    Set<String> applied = ConcurrentHashMap.newKeySet();
    Subscription sub =
        Subscription.builder("unstorable-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(topic)
            .eventTypes(
                EventTypes.builder().register("order.created", 1, OrderCreated.class).build())
            .allowedTenants(Set.of("acme"))
            .build();
    Map<String, Consumer<Map<String, Object>>> bads = new LinkedHashMap<>();
    bads.put("nul-tenant", h -> h.put(RabbitMessages.CE_TENANT, "ac\u0000me"));
    bads.put(
        "utf8-tenant",
        h ->
            h.put(
                RabbitMessages.CE_TENANT,
                LongStringHelper.asLongString(new byte[] {'a', (byte) 0xC3, 0})));
    bads.put("nul-source", h -> h.put(RabbitMessages.CE_SOURCE, "/a\u0000b"));
    bads.put(
        "nul-header-name",
        h -> {
          h.put("no\u0000te", "x");
          h.put(RabbitMessages.CE_TENANT, "evil");
        });
    List<String> good = new ArrayList<>();
    Map<String, AMQP.BasicProperties> sentBad = new HashMap<>();
    try (RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(1)
            .deadLetters(store)
            .handler(d -> applied.add(d.event(OrderCreated.class).sku()))
            .build()) {
      s.start();
      ConnectionFactory f = new ConnectionFactory();
      f.setUri(server.uri());
      int sent = 0;
      try (Connection c = f.newConnection();
          Channel ch = c.createChannel()) {
        // confirms: a broker is free to drop a message published without them on a channel closed
        // at once (a CI run lost one this way), which would fail the test as a timeout much later
        ch.confirmSelect();
        sent += publish(ch, topic, order(topic, "good-0"), h -> {});
        good.add("good-0");
        for (var bad : bads.entrySet()) {
          Message m = order(topic, bad.getKey());
          AMQP.BasicProperties p = spoiled(m, bad.getValue());
          ch.basicPublish(topic, KEY, p, m.payload().bytes());
          sent++;
          sentBad.put(bad.getKey(), p);
          String after = "after-" + bad.getKey();
          sent += publish(ch, topic, order(topic, after), h -> {});
          good.add(after);
        }
        ch.waitForConfirmsOrDie(30_000);
      }
      int total = sent;
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(() -> assertThat(applied).containsAll(good));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() >= total && s.inFlight() == 0);
      assertThat(s.stats().deadLettered()).isEqualTo(bads.size());
    }
    List<DeadLetterStore.DeadLetter> stored = store.query(DeadLetterStore.Query.all(100));
    assertThat(stored).hasSize(bads.size());
    Map<String, List<Header>> bySku = new HashMap<>();
    for (DeadLetterStore.DeadLetter dl : stored) {
      String body = new String(dl.letter().value(), StandardCharsets.UTF_8);
      String sku = body.substring(body.indexOf(":\"") + 2, body.indexOf("\","));
      bySku.put(sku, dl.letter().headers());
    }
    for (var e : sentBad.entrySet()) {
      List<Header> headers = bySku.get(e.getKey());
      assertThat(headers).as("the dead letter of %s", e.getKey()).isNotNull();
      assertThat(headers)
          .as("its headers, read back byte for byte")
          .isEqualTo(RabbitMessages.deadLetterHeaders(e.getValue()));
    }
  }

  private static int publish(
      Channel ch, String topic, Message m, Consumer<Map<String, Object>> spoil) throws Exception {
    ch.basicPublish(topic, KEY, spoiled(m, spoil), m.payload().bytes());
    return 1;
  }

  private static AMQP.BasicProperties spoiled(Message m, Consumer<Map<String, Object>> spoil) {
    AMQP.BasicProperties p = RabbitMessages.toProperties(m);
    Map<String, Object> headers = new LinkedHashMap<>(p.getHeaders());
    spoil.accept(headers);
    // as the broker delivers them: text headers arrive as long strings
    headers.replaceAll(
        (k, v) -> v instanceof String t ? LongStringHelper.asLongString(t) : (LongString) v);
    return p.builder().headers(headers).build();
  }

  private static Message order(String topic, String sku) {
    return Message.builder(topic, "order.created")
        .key(KEY)
        .tenant("acme")
        .jsonPayload("{\"sku\":\"" + sku + "\",\"quantity\":1}")
        .build();
  }
}
