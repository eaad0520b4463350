package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.PostgresServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The history checker finds every kind of violation it claims to: a history written by hand with
 * one lost effect, two duplicate effects, one effect out of key order, one applied and one
 * published rolled-back message, one committed offset past a record without effect, one effect
 * applied by a process after another was assigned its partition, and two dead letters (one of an
 * applied message, a false conflict, and one without a message id, a record that could not be
 * decoded); a committed offset past a parked record is not a violation.
 */
@PostboxTest
class HistoryCheckerIT {

  private static final String GROUP = "checker-it";

  // one server for both tests (each has its own schema): the checker reads commit timestamps
  private static PostgresServer pg;

  @BeforeAll
  static void startPostgres() {
    pg = PostgresServer.builder().serverConfig("track_commit_timestamp", "on").build();
    pg.start();
  }

  @AfterAll
  static void stopPostgres() {
    pg.close();
  }

  /**
   * A test's history: a new schema with Postbox's and the harness's tables, a one-partition topic,
   * and the checker's reader, admin client and fault log (in a new directory).
   */
  private record History(
      Path dir, String topic, HikariDataSource ds, Admin admin, TopicReader reader, FaultLog log)
      implements AutoCloseable {

    static History open(PostboxTestContext ctx, String name) throws Exception {
      Path dir = Files.createTempDirectory("history-checker-" + name + "-it");
      String topic = ctx.topic(name, 1);
      HikariDataSource ds = pg.dataSource(pg.createSchema(name), 2);
      PostboxMigrations.migrate(ds);
      HarnessSchema.create(ds, 4);
      return new History(
          dir,
          topic,
          ds,
          HistoryCheckerIT.admin(ctx),
          new TopicReader(ctx.bootstrapServers(), topic, 1),
          new FaultLog(dir.resolve("faults.log")));
    }

    @Override
    public void close() throws Exception {
      try (ds;
          admin;
          reader;
          log) {
        // closed in reverse order
      }
    }
  }

  @Test
  void findsEveryKindOfViolation(PostboxTestContext ctx) throws Exception {
    try (History h = History.open(ctx, "checker")) {
      HikariDataSource ds = h.ds();
      Admin admin = h.admin();
      TopicReader reader = h.reader();
      FaultLog log = h.log();
      String topic = h.topic();
      UUID m1 = business(ds, "a", 1);
      UUID m2 = business(ds, "a", 2);
      UUID m3 = business(ds, "b", 1);
      UUID m4 = business(ds, "b", 2); // never applied: lost
      UUID m5 = UUID.randomUUID(); // rolled back, yet published and applied
      exec(ds, "INSERT INTO verify_rolled_back VALUES ('" + m5 + "', 'c', 1)");
      UUID m6 = business(ds, "c", 1);
      UUID m7 = business(ds, "d", 1); // parked (not applied yet: lost at this check)

      assign(ds, "A", 0, 1);
      effect(ds, m2, "a", 2, "A");
      effect(ds, m1, "a", 1, "A"); // out of order
      effect(ds, m3, "b", 1, "A");
      effect(ds, m3, "b", 1, "A"); // duplicate
      effect(ds, m5, "c", 9, "A"); // rolled back, applied
      assign(ds, "B", 0, 3);
      assign(ds, "C", 0, 2); // a stale generation recorded late (a resumed process): no zombie
      effect(ds, m6, "c", 1, "A"); // after B took partition 0: zombie
      effect(ds, m6, "c", 1, "B"); // B applies after C's late stale record: no zombie (a dup)

      publish(
          ctx,
          topic,
          new Object[][] {
            {m1, "a", 1},
            {m2, "a", 2},
            {m1, "a", 1},
            {m3, "b", 1},
            {m3, "b", 1},
            {m4, "b", 2},
            {m5, "c", 9},
            {m6, "c", 1},
            {m7, "d", 1}
          });
      admin
          .alterConsumerGroupOffsets(
              GROUP, Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(9)))
          .all()
          .get();
      assertThat(reader.awaitPositions(Map.of(0, 9L), Duration.ofSeconds(30))).isTrue();
      exec(
          ds,
          "INSERT INTO postbox_parked (consumer, msg_key, topic, partition, \"offset\","
              + " header_names, header_values, due_at) VALUES ('c', 'd', '"
              + topic
              + "', 0, 8, '{}', '{}', now())");
      deadLetter(ds, topic, 0, m1, "CONFLICT"); // applied, then a false conflict
      deadLetter(ds, topic, 3, null, "PERMANENT"); // could not be decoded

      HistoryChecker checker = new HistoryChecker(ds, admin, reader, topic, 1, GROUP, log);
      Findings f = checker.check(1);

      assertThat(f.messages()).isEqualTo(6);
      assertThat(f.rolledBack()).isEqualTo(1);
      assertThat(f.lost()).isEqualTo(2); // m4, and m7 still parked
      assertThat(f.deadLettered()).isEqualTo(2);
      assertThat(f.parked()).isEqualTo(1);
      assertThat(f.unparked()).isZero();
      assertThat(f.duplicateEffects()).isEqualTo(2); // m3 twice by A, m6 by A and by B
      assertThat(f.orderViolations()).isEqualTo(1);
      assertThat(f.zombieApplies()).isEqualTo(1);
      assertThat(f.rolledBackApplied()).isEqualTo(1);
      assertThat(f.rolledBackPublished()).isEqualTo(1);
      assertThat(f.offsetViolations()).isEqualTo(1); // m4, offset 5; m7 (offset 8) is parked
      assertThat(f.offsetRecordsChecked()).isEqualTo(9);
      assertThat(f.offsetSamples()).isEqualTo(1);
      assertThat(f.offsetAuditFailures()).isZero();
      assertThat(f.topicRecords()).isEqualTo(8);
      assertThat(f.topicDuplicates()).isEqualTo(2);
      assertThat(f.staleRepublishes()).isEqualTo(1);
      assertThat(checker.drained()).isFalse();
      assertThat(f.violations()).isEqualTo(2 + 2 + 2 + 1 + 1 + 1 + 1 + 1);
      assertThat(f.inconclusiveReasons(true)).isEmpty();

      // the parked record applied and removed: counted once as unparked; nothing new
      exec(ds, "DELETE FROM postbox_parked");
      Findings next = checker.check(1);
      assertThat(next.unparked()).isEqualTo(1);
      assertThat(next.parked()).isZero();
      assertThat(next.deadLettered()).isZero();
      assertThat(next.offsetRecordsChecked()).isZero();
      assertThat(next.inconclusiveReasons(false))
          .singleElement()
          .asString()
          .contains("checked no record");

      // the offsets mode: the offsets stored with the effects are audited too, and a duplicate
      // effect is a second one of a record position (copies at other positions: measured only)
      exec(
          ds,
          "INSERT INTO postbox_consumer_offset (consumer_group, topic, partition, next_offset)"
              + " VALUES ('"
              + GROUP
              + "', '"
              + topic
              + "', 0, 7)");
      HistoryChecker offsets = new HistoryChecker(ds, admin, reader, topic, 1, GROUP, log);
      offsets.consumerMode(ConsumerMode.OFFSETS);
      Findings o = offsets.check(1);
      assertThat(o.offsetSamples()).isEqualTo(2); // committed (to 9) and stored (to 7)
      assertThat(o.offsetRecordsChecked()).isEqualTo(9 + 7);
      // m4 (offset 5) below both offsets; m7 (offset 8, its parking row gone) below the committed
      assertThat(o.offsetViolations()).isEqualTo(3);
      // every effect is at partition 0 offset 0 here: 6 effects of the phase at one position
      assertThat(o.duplicateEffects()).isEqualTo(5);
      exec(ds, "UPDATE verify_effect SET off = id"); // each effect at its own position
      assertThat(offsets.check(1).duplicateEffects()).as("copies at other positions").isZero();

      // a republished copy of m1 applied again after m2, a later message of its key: in the
      // offsets mode that is the measured duplicate of a copy at a new offset, not an order
      // violation (the first effects' order still counts: m1's first came after m2's); with
      // the inbox, every effect counts
      assertThat(offsets.check(1).orderViolations()).isEqualTo(1);
      effect(ds, m1, "a", 1, "A");
      assertThat(offsets.check(1).orderViolations()).isEqualTo(1);
      assertThat(checker.check(1).orderViolations()).isEqualTo(2);

      // samples during the phase succeed, the final one at the check cannot be taken (the group
      // committed past what the topic holds): what was committed since the last good sample is
      // unchecked, so the scenario cannot pass, although every earlier sample was fine
      HistoryChecker last = new HistoryChecker(ds, admin, reader, topic, 1, GROUP, log);
      assertThat(last.auditOffsets()).isTrue();
      admin
          .alterConsumerGroupOffsets(
              GROUP, Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(20)))
          .all()
          .get();
      Findings unchecked = last.check(1);
      assertThat(unchecked.offsetSamples()).isEqualTo(1);
      assertThat(unchecked.offsetRecordsChecked()).isEqualTo(9);
      assertThat(unchecked.offsetAuditFailures()).isEqualTo(1);
      assertThat(unchecked.inconclusiveReasons(false))
          .singleElement()
          .asString()
          .contains("final offset audit failed");
    }
  }

  /**
   * With the producers' commit journals: an acknowledged commit the database no longer holds (lost
   * by PostgreSQL, e.g. an asynchronous standby promoted before it had it) is counted as such, and
   * its record on the topic and its effect are not blamed on Postbox as a rolled-back message's; a
   * journaled commit the database holds and nobody applied stays lost by Postbox, while one a
   * consumer journaled as applied (its effect's commit lost) is PostgreSQL's loss, and neither the
   * offset audit nor the drain waits for it. The loss is a violation on a synchronous standby and
   * measured on an asynchronous one; without journals it is not looked for, and the orphan record
   * and effect are violations as before.
   */
  @Test
  void tellsTheCommitsPostgresLostFromTheEventsPostboxLost(PostboxTestContext ctx)
      throws Exception {
    try (History h = History.open(ctx, "journal")) {
      HikariDataSource ds = h.ds();
      Admin admin = h.admin();
      TopicReader reader = h.reader();
      FaultLog log = h.log();
      String topic = h.topic();
      Path dir = h.dir();
      UUID applied = business(ds, "a", 1);
      UUID notApplied = business(ds, "a", 2); // Postbox's loss
      UUID lostByPg = UUID.randomUUID(); // acknowledged, then gone with the old primary
      UUID orphan = UUID.randomUUID(); // on the topic and applied, never acknowledged
      UUID effectLost = business(ds, "a", 3); // applied and committed, then gone with the primary
      // applied, that effect gone with the primary, applied again from a copy after a later one
      UUID reapplied = business(ds, "d", 1);
      UUID later = business(ds, "d", 2);
      Path journals = dir.resolve("journals");
      try (CommitJournal j = CommitJournal.open(journals.resolve("p#1" + CommitJournal.SUFFIX))) {
        j.acknowledged(1, java.util.List.of(applied));
        j.acknowledged(1, java.util.List.of(notApplied, lostByPg));
      }
      try (CommitJournal j = CommitJournal.open(journals.resolve("c#1" + AppliedJournal.SUFFIX))) {
        j.acknowledged(1, java.util.List.of(applied, effectLost));
        j.acknowledged(1, java.util.List.of(reapplied, later));
        j.acknowledged(1, java.util.List.of(reapplied));
      }
      // a line cut short by a kill while it was written: not read
      Files.writeString(journals.resolve("p#2" + CommitJournal.SUFFIX), "1," + applied + "\n1,12");
      assign(ds, "A", 0, 1);
      effect(ds, applied, "a", 1, "A");
      effect(ds, lostByPg, "b", 1, "A");
      effect(ds, orphan, "c", 1, "A");
      effect(ds, later, "d", 2, "A");
      effect(ds, reapplied, "d", 1, "A"); // out of order, but its first effect was lost
      publish(
          ctx,
          topic,
          new Object[][] {
            {applied, "a", 1}, {notApplied, "a", 2}, {lostByPg, "b", 1}, {effectLost, "a", 3}
          });
      assertThat(reader.awaitPositions(Map.of(0, 4L), Duration.ofSeconds(30))).isTrue();
      admin
          .alterConsumerGroupOffsets(
              GROUP, Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(4)))
          .all()
          .get();

      HistoryChecker asynchronous = new HistoryChecker(ds, admin, reader, topic, 1, GROUP, log);
      asynchronous.commitJournals(journals, true);
      Findings a = asynchronous.check(1);
      assertThat(a.lostByPostgres())
          .as("a producer's commit, a consumer's, and the first of a re-applied message")
          .isEqualTo(3);
      assertThat(a.orderViolations()).as("the re-applied copy is judged by its loss").isZero();
      assertThat(a.postgresLoss()).isEqualTo(Findings.PostgresLoss.MEASURED);
      assertThat(a.lost()).as("journaled, in the database, never applied").isEqualTo(1);
      assertThat(a.rolledBackPublished()).as("the lost commit's record is not blamed").isZero();
      assertThat(a.rolledBackApplied()).as("only the orphan effect").isEqualTo(1);
      assertThat(a.offsetViolations()).as("past the never-applied record only").isEqualTo(1);
      assertThat(a.violations()).isEqualTo(3);
      assertThat(asynchronous.drained()).as("the never-applied message").isFalse();

      HistoryChecker synchronous = new HistoryChecker(ds, admin, reader, topic, 1, GROUP, log);
      synchronous.commitJournals(journals, false);
      Findings s = synchronous.check(1);
      assertThat(s.postgresLoss()).isEqualTo(Findings.PostgresLoss.VIOLATION);
      assertThat(s.violations()).as("a synchronous standby lost nothing").isEqualTo(3 + 3);

      HistoryChecker none = new HistoryChecker(ds, admin, reader, topic, 1, GROUP, log);
      Findings n = none.check(1);
      assertThat(n.postgresLoss()).isEqualTo(Findings.PostgresLoss.NOT_CHECKED);
      assertThat(n.lostByPostgres()).isZero();
      assertThat(n.lost()).isEqualTo(2);
      assertThat(n.rolledBackPublished()).isEqualTo(1);
      assertThat(n.rolledBackApplied()).isEqualTo(2);
      assertThat(n.offsetViolations()).isEqualTo(2);
      assertThat(n.orderViolations()).as("without journals, the copy out of order").isEqualTo(1);
      assertThat(n.violations()).isEqualTo(2 + 1 + 2 + 2 + 1);

      // the never-applied message applied: drained, the consumer-lost effect notwithstanding
      effect(ds, notApplied, "a", 2, "A");
      assertThat(asynchronous.drained()).isTrue();
      assertThat(none.drained()).as("without journals the lost effect is missing").isFalse();
    }
  }

  /** Publishes each {message id, key, seq} to partition 0 of {@code topic}, as the relay would. */
  private static void publish(PostboxTestContext ctx, String topic, Object[][] records)
      throws Exception {
    try (KafkaProducer<byte[], byte[]> producer = producer(ctx)) {
      for (Object[] r : records) {
        ProducerRecord<byte[], byte[]> pr =
            new ProducerRecord<>(
                topic,
                0,
                ((String) r[1]).getBytes(StandardCharsets.UTF_8),
                ("{\"key\":\"" + r[1] + "\",\"seq\":" + r[2] + "}")
                    .getBytes(StandardCharsets.UTF_8));
        pr.headers().add(KafkaRecords.CE_ID, r[0].toString().getBytes(StandardCharsets.UTF_8));
        producer.send(pr).get();
      }
    }
  }

  private static UUID business(HikariDataSource ds, String key, long seq) throws Exception {
    UUID id = UUID.randomUUID();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO verify_business (message_id, key, seq, phase, producer)"
                    + " VALUES (?, ?, ?, 1, 'p')")) {
      ps.setObject(1, id);
      ps.setString(2, key);
      ps.setLong(3, seq);
      ps.executeUpdate();
    }
    return id;
  }

  private static void effect(HikariDataSource ds, UUID id, String key, long seq, String instance)
      throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO verify_effect (message_id, key, seq, instance, part, off)"
                    + " VALUES (?, ?, ?, ?, 0, 0)")) {
      ps.setObject(1, id);
      ps.setString(2, key);
      ps.setLong(3, seq);
      ps.setString(4, instance);
      ps.executeUpdate();
    }
  }

  private static void deadLetter(
      HikariDataSource ds, String topic, long offset, UUID id, String classification)
      throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO postbox_dead_letter (consumer, topic, partition, \"offset\","
                    + " message_id, classification, error_class, fingerprint, attempts,"
                    + " first_failure, last_failure) VALUES ('c', ?, 0, ?, ?, ?, 'E', 'f', 1,"
                    + " now(), now())")) {
      ps.setString(1, topic);
      ps.setLong(2, offset);
      ps.setObject(3, id);
      ps.setString(4, classification);
      ps.executeUpdate();
    }
  }

  private static void assign(HikariDataSource ds, String instance, int part, int generation)
      throws Exception {
    exec(
        ds,
        "INSERT INTO verify_assignment (instance, part, generation) VALUES ('"
            + instance
            + "', "
            + part
            + ", "
            + generation
            + ")");
  }

  private static void exec(HikariDataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.executeUpdate();
    }
  }

  private static Admin admin(PostboxTestContext ctx) {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    return Admin.create(p);
  }

  private static KafkaProducer<byte[], byte[]> producer(PostboxTestContext ctx) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers());
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return new KafkaProducer<>(p);
  }
}
