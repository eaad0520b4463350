package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.BadInputCorpus.Applied;
import dev.postbox.kafka.BadInputCorpus.Case;
import dev.postbox.kafka.BadInputCorpus.DeadLettered;
import dev.postbox.kafka.BadInputCorpus.End;
import dev.postbox.kafka.BadInputCorpus.Ignored;
import dev.postbox.kafka.BadInputCorpus.Item;
import dev.postbox.kafka.BadInputCorpus.Rec;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Issue 19's bad-input corpus ({@link BadInputCorpus}): every record is sent with a plain producer,
 * followed by a good record of the same key on the same (only) partition, to a subscriber of each
 * guarantee; then each record's end state is checked: applied (effects by message id), ignored and
 * counted, or dead-lettered (found by its offset) with its classification, error class and reason;
 * and every good record after a bad one was applied, so no bad record stalls a partition. One topic
 * per guarantee, all records in one go.
 */
@PostboxTest
class BadInputCorpusIT extends Subscribers {

  private static final List<DeliveryGuarantee> GUARANTEES =
      List.of(
          DeliveryGuarantee.AT_MOST_ONCE,
          DeliveryGuarantee.AT_LEAST_ONCE,
          DeliveryGuarantee.EFFECTIVELY_ONCE);

  /** What was sent to one topic: per case, the judged record's offset; the good records' ids. */
  private record Sent(Map<String, Long> judgedOffsets, List<UUID> goodIds, int records) {}

  @Test
  void everyBadRecordReachesItsEndStateAndNeverStallsItsPartition(PostboxTestContext ctx)
      throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE corpus_effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
              + " message_id uuid NOT NULL)");
    }
    long t0 = System.nanoTime();
    List<Case> cases = BadInputCorpus.cases();
    assertThat(cases).hasSizeGreaterThanOrEqualTo(40);
    Map<DeliveryGuarantee, String> topics = new EnumMap<>(DeliveryGuarantee.class);
    Map<DeliveryGuarantee, Sent> sent = new EnumMap<>(DeliveryGuarantee.class);
    for (DeliveryGuarantee g : GUARANTEES) {
      topics.put(
          g,
          ctx.topic(
              "corpus-" + g.name().toLowerCase().replace('_', '-'),
              1,
              Map.of("max.message.bytes", Integer.toString(16 * 1024 * 1024))));
    }
    try (KafkaProducer<byte[], byte[]> producer = producer(ctx.bootstrapServers())) {
      for (DeliveryGuarantee g : GUARANTEES) {
        sent.put(g, send(producer, topics.get(g), cases));
      }
    }
    long t1 = System.nanoTime();
    DeadLetterStore deadLetters = PostgresDeadLetterStore.create(ds);
    Map<DeliveryGuarantee, KafkaSubscriber> subscribers = new EnumMap<>(DeliveryGuarantee.class);
    for (DeliveryGuarantee g : GUARANTEES) {
      subscribers.put(g, start(subscriber(ctx, g, topics.get(g), deadLetters, ds)));
    }
    for (DeliveryGuarantee g : GUARANTEES) {
      KafkaSubscriber s = subscribers.get(g);
      Sent out = sent.get(g);
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> s.stats().received() >= out.records() && s.inFlight() == 0);
    }
    long t2 = System.nanoTime();
    System.out.printf(
        "corpus: %d cases; sent in %d ms, consumed in %d ms%n",
        cases.size(), (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000);
    List<String> problems = new ArrayList<>();
    for (DeliveryGuarantee g : GUARANTEES) {
      String consumer = consumer(g);
      Sent out = sent.get(g);
      for (UUID good : out.goodIds()) {
        if (effects(ds, consumer, good) != 1) {
          problems.add(g + ": the good record " + good + " was not applied once");
        }
      }
      Map<Long, DeadLetter> lettersByOffset = new HashMap<>();
      for (DeadLetter dl : deadLetters.query(DeadLetterStore.Query.all(10_000))) {
        if (dl.letter().consumer().equals(consumer)) {
          lettersByOffset.put(dl.letter().offset(), dl);
        }
      }
      long dead = 0;
      Map<String, Long> counted = new HashMap<>();
      for (Case c : cases) {
        End end = c.end(g);
        DeadLetter letter = lettersByOffset.get(out.judgedOffsets().get(c.name()));
        int effects = effects(ds, consumer, c.judged().id);
        String at = g + " " + c.name() + ": ";
        switch (end) {
          case Applied a -> {
            if (effects != a.times() || letter != null) {
              problems.add(
                  at
                      + "expected "
                      + a.describe()
                      + ", got "
                      + effects
                      + " effects"
                      + (letter == null
                          ? ""
                          : " and a dead letter " + letter.letter().errorMessage()));
            }
          }
          case Ignored i -> {
            counted.merge(i.counter(), 1L, Long::sum);
            if (effects != (c.records().size() - 1) || letter != null) {
              problems.add(at + "expected ignored, got " + effects + " effects, letter " + letter);
            }
          }
          case DeadLettered d -> {
            dead++;
            if (letter == null) {
              problems.add(
                  at + "expected " + d.describe() + ", no dead letter; " + effects + " effects");
            } else if (letter.letter().classification() != d.classification()
                || !letter.letter().errorClass().equals(d.error().getName())
                || !letter.letter().errorMessage().contains(d.reason())) {
              problems.add(
                  at
                      + "expected "
                      + d.describe()
                      + ", got "
                      + letter.letter().classification()
                      + " "
                      + letter.letter().errorClass()
                      + ": "
                      + letter.letter().errorMessage());
            } else if (effects != c.records().size() - 1) {
              problems.add(at + "dead-lettered but " + effects + " effects");
            }
          }
        }
      }
      ConsumerStats stats = subscribers.get(g).stats();
      if (lettersByOffset.size() != dead || stats.deadLettered() != dead) {
        problems.add(
            g
                + ": "
                + dead
                + " dead letters expected, "
                + lettersByOffset.size()
                + " stored, "
                + stats.deadLettered()
                + " counted");
      }
      if (stats.unknownTypes() != counted.getOrDefault("unknownTypes", 0L)
          || stats.duplicatesSuppressed() != counted.getOrDefault("duplicatesSuppressed", 0L)) {
        problems.add(g + ": counters " + stats + ", expected " + counted);
      }
    }
    assertThat(problems).as("cases that did not reach their end state").isEmpty();
  }

  private static String consumer(DeliveryGuarantee g) {
    return "corpus-" + g.name().toLowerCase().replace('_', '-');
  }

  private KafkaSubscriber.Builder subscriber(
      PostboxTestContext ctx,
      DeliveryGuarantee g,
      String topic,
      DeadLetterStore deadLetters,
      DataSource ds) {
    String consumer = consumer(g);
    KafkaSubscriber.Builder b =
        KafkaSubscriber.builder(
                ctx.bootstrapServers(),
                Subscription.builder(consumer)
                    .topics(topic)
                    .guarantee(g)
                    .eventTypes(BadInputCorpus.eventTypes())
                    .allowedTenants(Set.of(BadInputCorpus.TENANT))
                    .build())
            .deadLetters(deadLetters);
    if (g == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      return b.inbox(PostgresInboxStore.create(ds))
          .handler(d -> {
            d.event(Item.class);
            record(d.connection().orElseThrow(), consumer, d.message().id());
          });
    }
    return b.handler(d -> {
      d.event(Item.class);
      try (Connection c = ds.getConnection()) {
        record(c, consumer, d.message().id());
      }
    });
  }

  private static void record(Connection c, String consumer, UUID id) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO corpus_effect (consumer, message_id) VALUES (?, ?)")) {
      ps.setString(1, consumer);
      ps.setObject(2, id);
      ps.executeUpdate();
    }
  }

  private static int effects(DataSource ds, String consumer, UUID id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM corpus_effect WHERE consumer = ? AND message_id = ?")) {
      ps.setString(1, consumer);
      ps.setObject(2, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 16 * 1024 * 1024);
    p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L * 1024 * 1024);
    return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** The judged record's ce_partitionkey when it has a readable one, else the case name. */
  private static String partitionKey(Case c) {
    for (var h : c.judged().headers) {
      if (h.key().equals(KafkaRecords.CE_PARTITIONKEY) && h.value() != null) {
        return new String(h.value(), java.nio.charset.StandardCharsets.UTF_8);
      }
    }
    return c.name();
  }

  /** Each case's records, each followed by a good record of its key, all to partition 0. */
  private static Sent send(KafkaProducer<byte[], byte[]> producer, String topic, List<Case> cases)
      throws Exception {
    Map<String, Future<RecordMetadata>> judged = new HashMap<>();
    List<UUID> good = new ArrayList<>();
    List<Future<RecordMetadata>> all = new ArrayList<>();
    for (Case c : cases) {
      for (Rec r : c.records()) {
        Future<RecordMetadata> f =
            producer.send(new ProducerRecord<>(topic, 0, r.key, r.value, r.headers));
        all.add(f);
        if (r == c.judged()) {
          judged.put(c.name(), f);
        }
      }
      Rec after = Rec.valid(c.judged().key == null ? null : partitionKey(c));
      after.key = c.judged().key; // the same record key bytes, whatever they are
      good.add(after.id);
      all.add(producer.send(new ProducerRecord<>(topic, 0, after.key, after.value, after.headers)));
    }
    for (Future<RecordMetadata> f : all) {
      f.get();
    }
    Map<String, Long> offsets = new HashMap<>();
    for (var e : judged.entrySet()) {
      offsets.put(e.getKey(), e.getValue().get().offset());
    }
    return new Sent(offsets, good, all.size());
  }
}
