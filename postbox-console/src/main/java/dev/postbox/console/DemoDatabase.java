package dev.postbox.console;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.PostgresServer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * {@code ./postbox console --demo}: an embedded PostgreSQL (the test kit's) with the tables and a
 * small shop's failures written through the stores, as a failing consumer and relay leave them:
 * dead letters in three groups, a parked key, an outbox row that holds its key, a pending backlog.
 * Not a recorded {@code ./postbox demo} run: that one's database lives only while the demo runs.
 */
final class DemoDatabase implements AutoCloseable {

  private final PostgresServer postgres;
  private final String schema;

  private DemoDatabase(PostgresServer postgres, String schema) {
    this.postgres = postgres;
    this.schema = schema;
  }

  /** Starts PostgreSQL, creates the tables and writes the shop's failures. */
  static DemoDatabase start() {
    PostgresServer pg = PostgresServer.embedded();
    pg.start();
    String schema = pg.createSchema("console_demo");
    DataSource ds = pg.dataSource(schema);
    PostboxMigrations.migrate(ds);
    seed(ds);
    return new DemoDatabase(pg, schema);
  }

  String jdbcUrl() {
    return postgres.jdbcUrl(schema);
  }

  String schema() {
    return schema;
  }

  @Override
  public void close() {
    postgres.close();
  }

  private static void seed(DataSource ds) {
    Instant now = Instant.now();
    for (int i = 0; i < 4; i++) {
      letter(
          ds,
          "shipping",
          order("shop.orders", "order-" + (1040 + i), "{\"order\":" + (1040 + i) + ",\"qty\":1}"),
          "com.shop.shipping.SkuMissing",
          "order " + (1040 + i) + " has no sku",
          now.minusSeconds(3600 - 300L * i));
    }
    letter(
        ds,
        "shipping",
        order("shop.orders", "order-1077", "{\"order\":1077,\"sku\":\"W-9\",\"qty\":3}"),
        "com.shop.shipping.WarehouseMissing",
        "no warehouse for W-9",
        now.minusSeconds(900));
    for (int i = 0; i < 2; i++) {
      letter(
          ds,
          "billing",
          order("shop.payments", "pay-" + (7 + i), "{\"payment\":" + (7 + i) + ",\"amount\":-5}"),
          "com.shop.billing.NegativeAmount",
          "amount must be positive",
          now.minusSeconds(600 - 60L * i));
    }
    ParkingStore.ParkedRecord rec =
        new ParkingStore.ParkedRecord(
            "shop.orders",
            0,
            2001,
            "order-1077".getBytes(StandardCharsets.UTF_8),
            "{\"order\":1077}".getBytes(StandardCharsets.UTF_8),
            List.of(
                new DeadLetterStore.Header(
                    "ce_id",
                    java.util.UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8))));
    PostgresParkingStore.create(ds)
        .park("inventory", "order-1077", rec, 1, now.plusSeconds(300), "stock service timed out");
    Outbox outbox = Outbox.postgres();
    outbox.inTransaction(
        ds,
        tx -> {
          for (int i = 0; i < 5; i++) {
            tx.write(order("shop.orders", "order-" + (1100 + i), "{\"order\":" + (1100 + i) + "}"));
          }
          return null;
        });
    try (var c = ds.getConnection();
        var s = c.createStatement()) {
      s.execute(
          "UPDATE postbox_outbox SET failed_at = now(), hold = 'KEY', last_error = 'record too"
              + " large for the broker (1.4 MB > 1 MB)' WHERE position = (SELECT min(position) FROM"
              + " postbox_outbox)");
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException("could not seed the demo's blocked row", e);
    }
  }

  private static Message order(String topic, String key, String json) {
    return Message.builder(topic, "order.placed").key(key).jsonPayload(json).build();
  }

  private static void letter(
      DataSource ds, String consumer, Message m, String errorClass, String error, Instant at) {
    ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);
    List<DeadLetterStore.Header> headers = new ArrayList<>();
    for (Header h : r.headers()) {
      headers.add(new DeadLetterStore.Header(h.key(), h.value()));
    }
    PostgresDeadLetterStore.create(ds)
        .add(
            new NewDeadLetter(
                consumer,
                m.topic(),
                0,
                at.toEpochMilli() % 100_000,
                Optional.of(m.id()),
                Optional.of(m.type()),
                r.key(),
                r.value(),
                headers,
                Classification.PERMANENT,
                errorClass,
                error,
                errorClass + ": " + error + "\n\tat com.shop.Handler.handle(Handler.java:42)",
                errorClass + "|" + error.replaceAll("[0-9]+", "#") + "|" + m.topic(),
                3,
                at,
                at.plusSeconds(4)));
  }
}
