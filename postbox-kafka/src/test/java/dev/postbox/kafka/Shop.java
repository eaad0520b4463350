package dev.postbox.kafka;

import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.DeliveryHistory;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Test workload: business transactions that bump a per-key counter (so the counter value is the
 * key's commit order) and write one outbox message carrying it, plus a reader that checks the topic
 * against the commits.
 */
final class Shop {

  final DataSource ds;
  final String topic;
  final Outbox outbox = Outbox.postgres();
  private final List<String[]> commits = new ArrayList<>();

  Shop(DataSource ds, String topic) throws SQLException {
    this.ds = ds;
    this.topic = topic;
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS key_counter (k text PRIMARY KEY, n bigint NOT NULL)");
    }
  }

  /** One business transaction for {@code key}; returns the message written. */
  Message order(String key) {
    return outbox.inTransaction(
        ds,
        tx -> {
          long seq;
          try (PreparedStatement ps =
              tx.connection()
                  .prepareStatement(
                      "INSERT INTO key_counter VALUES (?, 1) ON CONFLICT (k)"
                          + " DO UPDATE SET n = key_counter.n + 1 RETURNING n")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              seq = rs.getLong(1);
            }
          }
          Message m =
              Message.builder(topic, "order.created")
                  .key(key)
                  .header("seq", Long.toString(seq))
                  .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
                  .build();
          tx.write(m);
          return m;
        });
  }

  /** Runs {@link #order} and records the commit. */
  Message orderAndRecord(String key) {
    Message m = order(key);
    synchronized (commits) {
      commits.add(new String[] {key, m.header("seq").orElseThrow(), m.id().toString()});
    }
    return m;
  }

  long totalRows() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM postbox_outbox")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  long pendingRows() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Reads the whole topic until every committed message was seen (or the timeout) and checks it.
   */
  DeliveryHistory.Report readAndCheck(String bootstrap, Duration timeout) {
    Set<String> expected;
    synchronized (commits) {
      expected = new HashSet<>();
      commits.forEach(c -> expected.add(c[2]));
    }
    return check(readUntil(bootstrap, timeout, got -> messageIds(got).containsAll(expected)));
  }

  static Set<String> messageIds(List<ConsumerRecord<byte[], byte[]>> records) {
    Set<String> ids = new HashSet<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      ids.add(new String(r.headers().lastHeader("ce_id").value(), StandardCharsets.UTF_8));
    }
    return ids;
  }

  DeliveryHistory.Report check(List<ConsumerRecord<byte[], byte[]>> records) {
    DeliveryHistory h = new DeliveryHistory();
    synchronized (commits) {
      for (String[] c : commits) {
        h.committed(c[0], Long.parseLong(c[1]), c[2]);
      }
    }
    for (ConsumerRecord<byte[], byte[]> r : records) {
      Message m = KafkaRecords.fromRecord(r);
      h.observed(
          m.key().orElseThrow(), Long.parseLong(m.header("seq").orElseThrow()), m.id().toString());
    }
    return h.report();
  }

  /**
   * Every record on the topic, in partition order, polling until {@code done} accepts what was read
   * (then one more short poll, so that late duplicates are counted) or the timeout passes.
   */
  /** A read_committed consumer assigned every partition of the topic, at its beginning. */
  private KafkaConsumer<byte[], byte[]> fromTheBeginning(String bootstrap) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    List<TopicPartition> tps = new ArrayList<>();
    for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
      tps.add(new TopicPartition(topic, pi.partition()));
    }
    consumer.assign(tps);
    consumer.seekToBeginning(tps);
    return consumer;
  }

  /**
   * Every record on the topic now: reads each partition up to the end offset it has when this is
   * called (so the count does not depend on how fast the read is; waits at most {@code timeout}).
   */
  List<ConsumerRecord<byte[], byte[]>> readToEnd(String bootstrap, Duration timeout) {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer = fromTheBeginning(bootstrap)) {
      List<TopicPartition> tps = new ArrayList<>(consumer.assignment());
      java.util.Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofSeconds(30));
      long deadline = System.nanoTime() + timeout.toNanos();
      while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("topic " + topic + " not read to " + end + " in time");
        }
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
      }
    }
    return out;
  }

  List<ConsumerRecord<byte[], byte[]>> readUntil(
      String bootstrap, Duration timeout, Predicate<List<ConsumerRecord<byte[], byte[]>>> done) {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer = fromTheBeginning(bootstrap)) {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
        if (done.test(out)) {
          consumer.poll(Duration.ofMillis(300)).forEach(out::add);
          break;
        }
      }
    }
    return out;
  }
}
