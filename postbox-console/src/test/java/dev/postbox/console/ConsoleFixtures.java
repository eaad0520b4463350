package dev.postbox.console;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.kafka.KafkaRecords;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * The rows a failing consumer and relay leave behind, written through the stores (dead letters are
 * the Kafka records exactly as the consumer read them, so the console's decoder reads them back).
 */
final class ConsoleFixtures {

  private static final AtomicLong OFFSET = new AtomicLong();

  private ConsoleFixtures() {}

  /** A dead letter of {@code message} for {@code consumer}; returns its id. */
  static long deadLetter(DataSource ds, String consumer, Message message, String error) {
    return deadLetter(
        ds,
        consumer,
        message,
        error,
        "com.shop.WarehouseMissing|" + error.replaceAll("[0-9]", "#") + "|" + message.topic());
  }

  /** A dead letter with the given failure fingerprint (as a consumer writes it: a hash). */
  static long deadLetter(
      DataSource ds, String consumer, Message message, String error, String fingerprint) {
    return deadLetter(ds, consumer, message, "com.shop.WarehouseMissing", error, fingerprint);
  }

  /** A dead letter of an exception of class {@code errorClass} with the given fingerprint. */
  static long deadLetter(
      DataSource ds,
      String consumer,
      Message message,
      String errorClass,
      String error,
      String fingerprint) {
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(message);
    List<DeadLetterStore.Header> headers = new ArrayList<>();
    for (Header h : r.headers()) {
      headers.add(new DeadLetterStore.Header(h.key(), h.value()));
    }
    Instant now = Instant.now();
    return PostgresDeadLetterStore.create(ds)
        .add(
            new NewDeadLetter(
                consumer,
                message.topic(),
                0,
                OFFSET.incrementAndGet(),
                Optional.of(message.id()),
                Optional.of(message.type()),
                r.key(),
                r.value(),
                headers,
                Classification.PERMANENT,
                errorClass,
                error,
                errorClass
                    + ": "
                    + error
                    + "\n\tat com.shop.Shipping.handle(Shipping.java:42)"
                    + "\n\tat dev.postbox.core.consumer.Dispatcher.dispatch(Dispatcher.java:88)",
                fingerprint,
                3,
                now.minusSeconds(90),
                now.minusSeconds(60)));
  }

  static Message order(String topic, String key, String json) {
    return Message.builder(topic, "order.placed").key(key).jsonPayload(json).build();
  }

  /** A parked key of {@code consumer}, blocked behind a dead letter. */
  static void parked(DataSource ds, String consumer, String key) {
    parked(ds, consumer, key, UUID.randomUUID(), "boom");
  }

  /** A parked key whose head is message {@code id} and failed last with {@code error}. */
  static void parked(DataSource ds, String consumer, String key, UUID id, String error) {
    ParkingStore parking = PostgresParkingStore.create(ds);
    ParkingStore.ParkedRecord rec =
        new ParkingStore.ParkedRecord(
            "orders",
            0,
            OFFSET.incrementAndGet(),
            key.getBytes(java.nio.charset.StandardCharsets.UTF_8),
            "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8),
            List.of(
                new DeadLetterStore.Header(
                    "ce_id", id.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8))));
    parking.park(consumer, key, rec, 1, Instant.parse("9999-01-01T00:00:00Z"), error);
  }

  /** An outbox row the relay gave up on that holds its key; returns its position. */
  static long blocked(DataSource ds, String key) {
    return blocked(ds, key, UUID.randomUUID(), "record too large");
  }

  /** An outbox row of message {@code id} that holds its key, failed with {@code error}. */
  static long blocked(DataSource ds, String key, UUID id, String error) {
    exec(
        ds,
        "INSERT INTO postbox_outbox (message_id, topic, msg_key, lane, type, schema_version,"
            + " occurred_at, source, content_type, payload, failed_at, hold, last_error) VALUES ('"
            + id
            + "', 'orders', '"
            + key
            + "', 1, 't', 1, now(), '/x', 'application/json', '\\x7b7d', now(), 'KEY', '"
            + error
            + "')");
    return Long.parseLong(
        query(ds, "SELECT max(position) FROM postbox_outbox WHERE msg_key = '" + key + "'").get(0));
  }

  static void exec(DataSource ds, String sql) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static List<String> query(DataSource ds, String sql) {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      List<String> out = new ArrayList<>();
      while (rs.next()) {
        out.add(rs.getString(1));
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The operator actions' audit rows as {@code actor|action}, oldest first (no security events).
   */
  static List<String> audit(DataSource ds) {
    return query(
        ds,
        "SELECT by_whom || '|' || action FROM postbox_replay_audit WHERE action NOT IN"
            + " ('LOGIN_FAILED', 'LOGIN_THROTTLED', 'ACCESS_DENIED', 'REQUEST_REJECTED') ORDER BY id");
  }
}
