package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
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
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 2: a record carrying text PostgreSQL cannot hold (NUL in a CloudEvents attribute,
 * a header name or the key; invalid UTF-8 in the tenant) is dead-lettered with that text kept
 * losslessly, and never stops its key or its partition: the key's later records are applied and the
 * group's committed offset reaches the end of the partition. On the code before the fix, the
 * dead-letter insert was refused ("invalid byte sequence for encoding UTF8: 0x00") and retried
 * forever, so the partition's committed offset stayed before the bad record.
 */
@PostboxTest
class UnstorableTextIT extends Subscribers {

  private static final String KEY = "k";

  /** One bad record: how it was spoiled. */
  private record Bad(String what, Rec rec) {}

  @Test
  void aRecordWithNulTextIsDeadLetteredLosslesslyAndItsKeyAndPartitionGoOn(PostboxTestContext ctx)
      throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    String topic = ctx.topic("unstorable-text", 1);
    List<Bad> bads = badRecords();
    List<UUID> good = new ArrayList<>();
    Map<Long, Bad> badByOffset = new HashMap<>();
    long end;
    try (KafkaProducer<byte[], byte[]> producer = producer(ctx.bootstrapServers())) {
      good.add(send(producer, topic, Rec.valid(KEY)).id);
      for (Bad b : bads) {
        badByOffset.put(sendAt(producer, topic, b.rec()), b);
        good.add(send(producer, topic, Rec.valid(KEY)).id); // the same key, after the bad one
        good.add(send(producer, topic, Rec.valid("other")).id); // another key
      }
      end = sendAt(producer, topic, Rec.valid(KEY)) + 1;
    }
    Set<UUID> applied = ConcurrentHashMap.newKeySet();
    DeadLetterStore deadLetters = PostgresDeadLetterStore.create(ds);
    String group = "unstorable-text";
    KafkaSubscriber subscriber =
        start(
            KafkaSubscriber.builder(
                    ctx.bootstrapServers(),
                    Subscription.builder(group)
                        .topics(topic)
                        .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                        .eventTypes(BadInputCorpus.eventTypes())
                        .allowedTenants(Set.of(BadInputCorpus.TENANT))
                        .build())
                .deadLetters(deadLetters)
                .inbox(PostgresInboxStore.create(ds))
                .handler(d -> {
                  d.event(Item.class);
                  applied.add(d.message().id());
                }));

    TopicPartition tp = new TopicPartition(topic, 0);
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers()))) {
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(() -> {
            OffsetAndMetadata committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp);
            assertThat(committed)
                .as("the group's committed offset of %s (end %d)", tp, end)
                .isNotNull();
            assertThat(committed.offset()).isEqualTo(end);
          });
    }
    assertThat(applied).as("every good record, before and after the bad ones").containsAll(good);
    assertThat(subscriber.stats().deadLettered()).isEqualTo(bads.size());

    Map<Long, DeadLetter> letters = new HashMap<>();
    for (DeadLetter dl : deadLetters.query(DeadLetterStore.Query.all(100))) {
      letters.put(dl.letter().offset(), dl);
    }
    for (var e : badByOffset.entrySet()) {
      DeadLetter dl = letters.get(e.getKey());
      Rec sent = e.getValue().rec();
      assertThat(dl).as("the dead letter of %s", e.getValue().what()).isNotNull();
      assertThat(dl.letter().key()).as("key of %s", e.getValue().what()).isEqualTo(sent.key);
      assertThat(dl.letter().value()).isEqualTo(sent.value);
      List<DeadLetterStore.Header> headers = new ArrayList<>();
      for (Header h : sent.headers) {
        headers.add(new DeadLetterStore.Header(h.key(), h.value()));
      }
      assertThat(dl.letter().headers())
          .as("headers of %s, read back exactly", e.getValue().what())
          .isEqualTo(headers);
      assertThat(dl.letter().errorMessage()).isNotBlank();
      // the letter is found again by its filters, which read the stored text
      assertThat(
              deadLetters
                  .query(
                      new DeadLetterStore.Query(
                          java.util.Optional.of(group),
                          java.util.Optional.empty(),
                          java.util.Optional.empty(),
                          java.util.Optional.of(dl.letter().fingerprint()),
                          java.util.Optional.empty(),
                          java.util.Optional.empty(),
                          java.util.Optional.empty(),
                          100))
                  .stream()
                  .map(DeadLetter::id))
          .contains(dl.id());
    }
  }

  /** NUL in each text-bearing part a producer controls, and invalid UTF-8 in the tenant. */
  static List<Bad> badRecords() {
    List<Bad> b = new ArrayList<>();
    b.add(new Bad("NUL in ce_tenant", Rec.valid(KEY).set(KafkaRecords.CE_TENANT, "ac\u0000me")));
    b.add(
        new Bad(
            "invalid UTF-8 in ce_tenant",
            Rec.valid(KEY).setBytes(KafkaRecords.CE_TENANT, new byte[] {'a', (byte) 0xC3, 0})));
    b.add(new Bad("NUL in ce_source", Rec.valid(KEY).set(KafkaRecords.CE_SOURCE, "/a\u0000b")));
    b.add(
        new Bad(
            "NUL in ce_partitionkey",
            Rec.valid(KEY)
                .set(KafkaRecords.CE_PARTITIONKEY, KEY + "\u0000")
                .set(KafkaRecords.CE_TENANT, "evil")));
    b.add(new Bad("NUL in ce_id", Rec.valid(KEY).set(KafkaRecords.CE_ID, "id\u0000")));
    b.add(new Bad("NUL in ce_time", Rec.valid(KEY).set(KafkaRecords.CE_TIME, "2026\u0000")));
    b.add(
        new Bad(
            "NUL in a header name",
            Rec.valid(KEY)
                .add("no\u0000te", "x".getBytes(StandardCharsets.UTF_8))
                .set(KafkaRecords.CE_TENANT, "evil")));
    Rec key = Rec.valid(KEY).set(KafkaRecords.CE_TENANT, "evil");
    key.key = "k\u0000".getBytes(StandardCharsets.UTF_8);
    b.add(new Bad("NUL in the record key", key));
    return b;
  }

  private static Rec send(KafkaProducer<byte[], byte[]> p, String topic, Rec r) throws Exception {
    sendAt(p, topic, r);
    return r;
  }

  private static long sendAt(KafkaProducer<byte[], byte[]> p, String topic, Rec r)
      throws Exception {
    return p.send(new ProducerRecord<>(topic, 0, r.key, r.value, r.headers)).get().offset();
  }

  private static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
    return new KafkaProducer<>(
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.ACKS_CONFIG, "all"),
        new ByteArraySerializer(),
        new ByteArraySerializer());
  }
}
