package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.BadInputCorpus.Item;
import dev.postbox.kafka.BadInputCorpus.Rec;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Payloads and header values never reach the logs: a failing run (undecodable envelopes, poison
 * payloads, a rejected tenant, a message retried until it is dead-lettered) with a marker in every
 * payload and in header values, its log output (slf4j-simple writes to {@code System.err}, captured
 * here) searched for the marker. The dead letters do keep them, byte-identical.
 */
@PostboxTest
class LogRedactionIT extends Subscribers {

  private static final String MARK = "SeCrEtMaRk";

  @Test
  void aFailingRunLogsNeitherPayloadsNorHeaderValues(PostboxTestContext ctx) throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    String topic = ctx.topic("redaction", 1);
    List<Rec> records = new ArrayList<>();
    // poison payloads: a value of the wrong type, malformed JSON, a constructor-free mismatch
    records.add(
        Rec.valid("p1")
            .value("{\"sku\":\"" + MARK + "1\",\"quantity\":\"" + MARK + "2\"}")
            .add("note", utf8(MARK + "3")));
    records.add(Rec.valid("p2").value("{" + MARK + "4 ]"));
    records.add(Rec.valid("p3").value("[\"" + MARK + "5\"]"));
    // malformed envelope header values
    records.add(Rec.valid("h1").set(KafkaRecords.CE_ID, MARK + "6"));
    records.add(Rec.valid("h2").set(KafkaRecords.CE_SCHEMAVERSION, MARK + "7"));
    records.add(Rec.valid("h3").set(KafkaRecords.CE_TIME, MARK + "8"));
    records.add(Rec.valid("h4").set(KafkaRecords.CE_SPECVERSION, MARK + "9"));
    records.add(Rec.valid("h5").set(KafkaRecords.CONTENT_TYPE, "text/" + MARK + "10"));
    records.add(Rec.valid("h6").set(KafkaRecords.CONTENT_TYPE, "application/cloudevents+" + MARK));
    records.add(Rec.valid("h7").set(KafkaRecords.CE_TENANT, MARK + "11"));
    // retried (transient failure) until given up, then dead-lettered
    records.add(
        Rec.valid("retry")
            .value("{\"sku\":\"" + MARK + "12\",\"quantity\":7}")
            .add("note", utf8(MARK + "13")));

    CapturedStderr captured = new CapturedStderr();
    try (captured) {
      send(ctx.bootstrapServers(), topic, records);
      KafkaSubscriber s =
          start(
              KafkaSubscriber.builder(
                      ctx.bootstrapServers(),
                      Subscription.builder("redaction")
                          .topics(topic)
                          .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                          .eventTypes(BadInputCorpus.eventTypes())
                          .allowedTenants(Set.of(BadInputCorpus.TENANT))
                          .failureHandler(
                              FailureHandler.retrying(
                                  3,
                                  new Backoff(Duration.ofMillis(10), Duration.ofMillis(10), 1, 0)))
                          .build())
                  .inbox(PostgresInboxStore.create(ctx.dataSource()))
                  .deadLetters(PostgresDeadLetterStore.create(ctx.dataSource()))
                  .handler(d -> {
                    Item item = d.event(Item.class);
                    if (item.quantity() == 7) {
                      throw new IllegalStateException("payments unavailable");
                    }
                  }));
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> s.stats().deadLettered() == records.size() && s.inFlight() == 0);
      assertThat(s.stats().retries()).as("the retried message was retried").isEqualTo(2);
      s.close();
    }
    String log = captured.text();
    assertThat(log).as("the run logged its failures").contains("giving up on");
    assertThat(log.lines().filter(l -> l.contains(MARK)).toList())
        .as("log lines holding a payload or header value")
        .isEmpty();
  }

  private static void send(String bootstrap, String topic, List<Rec> records) throws Exception {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      List<Future<?>> fs = new ArrayList<>();
      for (Rec r : records) {
        fs.add(producer.send(new ProducerRecord<>(topic, 0, r.key, r.value, r.headers)));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
