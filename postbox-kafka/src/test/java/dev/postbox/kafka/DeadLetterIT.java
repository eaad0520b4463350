package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.codec.EventTypes;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

@PostboxTest
class DeadLetterIT extends Subscribers {

  record OrderCreated(String sku, int quantity) {}

  static final class ProductMissingException extends PermanentMessageException {
    ProductMissingException(String sku) {
      super("product " + sku + " does not exist");
    }
  }

  private static ProducerRecord<byte[], byte[]> send(
      String bootstrap, ProducerRecord<byte[], byte[]> r) throws Exception {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.send(r).get();
    }
    return r;
  }

  private static ProducerRecord<byte[], byte[]> record(Message m) {
    return KafkaRecords.toRecord(m);
  }

  @Test
  void everyClassOfBadInputLandsInDeadLettersByteIdenticalWithItsReason(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    String bs = ctx.bootstrapServers();
    new Effects(ctx.dataSource(), bs).close(); // migrations
    Map<String, ProducerRecord<byte[], byte[]>> sent = new HashMap<>();
    sent.put(
        "malformed",
        send(
            bs,
            record(
                Message.builder(topic, "order.created")
                    .key("a")
                    .tenant("acme")
                    .jsonPayload("{not json")
                    .build())));
    sent.put(
        "version",
        send(
            bs,
            record(
                Message.builder(topic, "order.created")
                    .key("b")
                    .tenant("acme")
                    .schemaVersion(3)
                    .jsonPayload("{\"sku\":\"s\",\"quantity\":1}")
                    .build())));
    sent.put(
        "tenant",
        send(
            bs,
            record(
                Message.builder(topic, "order.created")
                    .key("c")
                    .tenant("evil")
                    .jsonPayload("{\"sku\":\"s\",\"quantity\":1}")
                    .build())));
    sent.put(
        "missing-product",
        send(
            bs,
            record(
                Message.builder(topic, "order.created")
                    .key("d")
                    .tenant("acme")
                    .jsonPayload("{\"sku\":\"nope\",\"quantity\":1}")
                    .build())));
    sent.put(
        "flaky",
        send(
            bs,
            record(
                Message.builder(topic, "order.created")
                    .key("e")
                    .tenant("acme")
                    .jsonPayload("{\"sku\":\"flaky\",\"quantity\":1}")
                    .build())));
    ProducerRecord<byte[], byte[]> garbage =
        new ProducerRecord<>(topic, "f".getBytes(StandardCharsets.UTF_8), new byte[] {1, 2, 3});
    garbage
        .headers()
        .add("ce_type", "x".getBytes(StandardCharsets.UTF_8)); // no ce_id: not an envelope
    garbage.headers().add("dup", new byte[] {9});
    garbage.headers().add("dup", new byte[] {8});
    sent.put("undecodable", send(bs, garbage));

    DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
    EventTypes types =
        EventTypes.builder().register("order.created", 1, OrderCreated.class).build();
    KafkaSubscriber s =
        start(
            KafkaSubscriber.builder(
                    bs,
                    Subscription.builder("inventory")
                        .topics(topic)
                        .eventTypes(types)
                        .allowedTenants(Set.of("acme"))
                        .failureHandler(
                            FailureHandler.retrying(
                                3, new Backoff(Duration.ofMillis(10), Duration.ofMillis(10), 1, 0)))
                        .build())
                .deadLetters(store)
                .handler(d -> {
                  OrderCreated o = d.event(OrderCreated.class);
                  if (o.sku().equals("nope")) {
                    throw new ProductMissingException(o.sku());
                  }
                  if (o.sku().equals("flaky")) {
                    throw new IllegalStateException("dependency timed out after 30 ms");
                  }
                }));
    await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().deadLettered() == 6);
    List<DeadLetter> letters = store.query(DeadLetterStore.Query.all(100));
    assertThat(letters).hasSize(6);
    for (DeadLetter dl : letters) {
      String key = new String(dl.letter().key(), StandardCharsets.UTF_8);
      ProducerRecord<byte[], byte[]> original =
          sent.values().stream()
              .filter(r -> new String(r.key(), StandardCharsets.UTF_8).equals(key))
              .findFirst()
              .orElseThrow();
      assertThat(dl.letter().value()).as(key).isEqualTo(original.value());
      List<String> names = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      for (Header h : original.headers()) {
        names.add(h.key());
        values.add(h.value());
      }
      assertThat(dl.letter().headers())
          .extracting(DeadLetterStore.Header::name)
          .containsExactlyElementsOf(names);
      for (int i = 0; i < values.size(); i++) {
        assertThat(dl.letter().headers().get(i).value()).isEqualTo(values.get(i));
      }
      assertThat(dl.letter().consumer()).isEqualTo("inventory");
      assertThat(dl.letter().topic()).isEqualTo(topic);
      assertThat(dl.letter().fingerprint()).isNotBlank();
      if (key.equals("e")) {
        assertThat(dl.letter().classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
        assertThat(dl.letter().attempts()).isEqualTo(3);
        assertThat(dl.letter().errorMessage()).contains("timed out");
      } else {
        assertThat(dl.letter().classification()).as(key).isEqualTo(Classification.PERMANENT);
        assertThat(dl.letter().attempts())
            .as(key + ": permanent errors are not retried")
            .isEqualTo(1);
      }
    }
    assertThat(s.stats().retries()).isEqualTo(2);
  }

  @Test
  void aFailingKeyDoesNotHoldBackOtherKeysAndForgedRetryHeadersChangeNothing(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      List<Message> ms = new ArrayList<>();
      ms.add(Effects.message(topic, "sick", 0));
      for (int i = 1; i <= 200; i++) {
        ms.add(Effects.message(topic, "healthy-" + (i % 20), i));
      }
      fx.publishAll(ms);
      // forged retry bookkeeping on otherwise healthy records: nothing may pause, skip or retry
      // them
      for (String[] forged :
          new String[][] {
            {"pb_attempt", "-1"},
            {"retry-attempt", "2147483648"},
            {"pb_retry_at", "3000-01-01T00:00:00Z"}
          }) {
        ProducerRecord<byte[], byte[]> r = record(Effects.message(topic, "forged", 1000));
        r.headers().add(forged[0], forged[1].getBytes(StandardCharsets.UTF_8));
        send(ctx.bootstrapServers(), r);
      }
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("isolated")
                          .topics(topic)
                          .failureHandler(
                              (d, e) -> new FailureDecision.Retry(Duration.ofMinutes(10)))
                          .build())
                  .handler(d -> {
                    if (d.message().key().orElseThrow().equals("sick")) {
                      throw new IllegalStateException("sick dependency");
                    }
                    fx.applyAutoCommit("isolated", d);
                  }));
      // the sick key waits 10 minutes for its retry; everything else must flow meanwhile
      await().atMost(Duration.ofSeconds(60)).until(() -> fx.effects("isolated") == 203);
      assertThat(s.stats().retries()).as("only the sick key retries").isEqualTo(1);
      assertThat(fx.count("SELECT count(*) FROM effect WHERE msg_key = 'forged'")).isEqualTo(3);
    }
  }

  @Test
  void theSameIdWithADifferentPayloadIsRecordedAsAConflictNotDeduplicated(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 1);
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      Message original = Effects.message(topic, "k", 1);
      Message sameAgain = original; // a true duplicate
      Message tampered = original.toBuilder().jsonPayload("{\"key\":\"k\",\"seq\":999}").build();
      fx.publishAll(List.of(original, sameAgain, tampered));
      DeadLetterStore store = PostgresDeadLetterStore.create(ctx.dataSource());
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("conflicts")
                          .topics(topic)
                          .guarantee(dev.postbox.core.DeliveryGuarantee.EFFECTIVELY_ONCE)
                          .build())
                  .inbox(dev.postbox.jdbc.PostgresInboxStore.create(ctx.dataSource()))
                  .deadLetters(store)
                  .handler(d -> Effects.apply(d.connection().orElseThrow(), "conflicts", d)));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> s.stats().received() == 3 && s.inFlight() == 0);
      assertThat(fx.effects("conflicts")).isEqualTo(1);
      assertThat(s.stats().duplicatesSuppressed()).isEqualTo(1);
      List<DeadLetter> letters = store.query(DeadLetterStore.Query.all(10));
      assertThat(letters).hasSize(1);
      assertThat(letters.get(0).letter().classification()).isEqualTo(Classification.CONFLICT);
      assertThat(letters.get(0).letter().errorClass())
          .as("a public, documented class, not an internal nested one")
          .isEqualTo(dev.postbox.core.MessageConflictException.class.getName());
      assertThat(letters.get(0).letter().value()).isEqualTo(tampered.payload().bytes());
      assertThat(letters.get(0).letter().attempts()).isEqualTo(1);
    }
  }
}
