package dev.postbox.kafka;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.jdbc.PostboxMigrations;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Consumer test fixture: an effect table with <b>no</b> unique constraint on the message id (so a
 * duplicate effect stays visible), a producer of test messages, and offset look-ups.
 */
final class Effects implements AutoCloseable {

  final DataSource ds;
  final String bootstrap;
  private final KafkaProducer<byte[], byte[]> producer;

  Effects(DataSource ds, String bootstrap) throws SQLException {
    this.ds = ds;
    this.bootstrap = bootstrap;
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
              + " message_id uuid NOT NULL, msg_key text, seq bigint)");
    }
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  static Message message(String topic, String key, long seq) {
    return Message.builder(topic, "order.created")
        .key(key)
        .header("seq", Long.toString(seq))
        .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
        .build();
  }

  /** Sends a raw record (not necessarily a Postbox message) and waits for the ack. */
  void sendRaw(String topic, byte[] key, byte[] value) throws Exception {
    producer.send(new ProducerRecord<>(topic, key, value)).get();
  }

  /** Sends a raw record with headers and waits for the ack. */
  void sendRaw(String topic, byte[] key, byte[] value, Iterable<Header> headers) throws Exception {
    producer.send(new ProducerRecord<>(topic, null, key, value, headers)).get();
  }

  /** Publishes {@code m} (to {@code partition} if not null) and waits for the ack. */
  void publish(Message m, Integer partition) throws Exception {
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);
    if (partition != null) {
      r = new ProducerRecord<>(r.topic(), partition, r.key(), r.value(), r.headers());
    }
    producer.send(r).get();
  }

  /** Publishes every message and waits for the acks. */
  void publishAll(List<Message> ms) throws Exception {
    for (Future<RecordMetadata> f : send(ms)) {
      f.get();
    }
  }

  /** Hands every message to the producer; the acks are the caller's to wait for. */
  List<Future<RecordMetadata>> send(List<Message> ms) {
    List<Future<RecordMetadata>> fs = new ArrayList<>();
    for (Message m : ms) {
      fs.add(producer.send(KafkaRecords.toRecord(m)));
    }
    return fs;
  }

  /** The effect of one delivery, on the given connection. */
  static void apply(Connection c, String consumer, Delivery d) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO effect (consumer, message_id, msg_key, seq) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, consumer);
      ps.setObject(2, d.message().id());
      ps.setString(3, d.message().key().orElse(null));
      ps.setLong(4, Long.parseLong(d.message().header("seq").orElse("0")));
      ps.executeUpdate();
    }
  }

  /** The effect in its own auto-commit connection (for the guarantees without an inbox). */
  void applyAutoCommit(String consumer, Delivery d) throws SQLException {
    try (Connection c = ds.getConnection()) {
      apply(c, consumer, d);
    }
  }

  long count(String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  long effects(String consumer) throws SQLException {
    return count("SELECT count(*) FROM effect WHERE consumer = '" + consumer + "'");
  }

  long distinctEffects(String consumer) throws SQLException {
    return count(
        "SELECT count(DISTINCT message_id) FROM effect WHERE consumer = '" + consumer + "'");
  }

  /** Per key, the seqs in the order the effects were applied (effect serial order). */
  Map<String, List<Long>> effectOrder(String consumer) throws SQLException {
    Map<String, List<Long>> out = new HashMap<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT msg_key, seq FROM effect WHERE consumer = ? ORDER BY n")) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(2));
        }
      }
    }
    return out;
  }

  /** The committed offset of {@code group} on partition 0 of {@code topic}, -1 if none. */
  long committedOffset(String group, String topic, int partition) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(p)) {
      Map<TopicPartition, OffsetAndMetadata> m =
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
      OffsetAndMetadata o = m.get(new TopicPartition(topic, partition));
      return o == null ? -1 : o.offset();
    }
  }

  static void awaitQuietly(java.util.concurrent.CountDownLatch latch) {
    try {
      if (!latch.await(
          Duration.ofSeconds(60).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
        throw new IllegalStateException("latch not released within 60 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    producer.close();
  }
}
