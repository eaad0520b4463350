package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A rough, one-run measurement (not a benchmark, and not part of the normal test run): the time for
 * each relay to drain 10,000 pre-written events (1,000 transactions of 10 events over 100 keys) to
 * the test kit's broker, with the same harness and publisher settings. For the CDC relay the slot
 * exists before the events are written, so the backlog is in its WAL. Run with {@code
 * -Dpostbox.measure.drain=true}.
 */
@PostboxTest
@EnabledIfSystemProperty(named = "postbox.measure.drain", matches = "true")
class CdcDrainRateIT {

  private static final int TRANSACTIONS = 1_000;
  private static final int PER_TX = 10;
  private static final int EVENTS = TRANSACTIONS * PER_TX;

  private static void prewrite(DataSource ds, String topic) {
    Outbox outbox = Outbox.postgres();
    for (int t = 0; t < TRANSACTIONS; t++) {
      List<Message> tx = new ArrayList<>(PER_TX);
      for (int i = 0; i < PER_TX; i++) {
        int n = t * PER_TX + i;
        tx.add(
            Message.builder(topic, "order.created")
                .key("k" + (n % 100))
                .jsonPayload("{\"n\":" + n + ",\"pad\":\"" + "x".repeat(150) + "\"}")
                .build());
      }
      outbox.inTransaction(
          ds,
          w -> {
            w.writeAll(tx);
            return null;
          });
    }
  }

  @Test
  void cdcRelay(PostboxTestContext ctx) throws Exception {
    drainCdc(ctx, "cdc", KafkaRelayPublisher.builder(ctx.bootstrapServers()).build());
  }

  /** The same without a broker: what streaming, decoding and marking alone take. */
  @Test
  void cdcRelayWithoutBroker(PostboxTestContext ctx) throws Exception {
    drainCdc(
        ctx,
        "cdc (no broker: every message acknowledged at once)",
        new RelayPublisher() {
          @Override
          public List<PublishOutcome> publish(List<Message> messages) {
            return java.util.Collections.nCopies(messages.size(), PublishOutcome.ACKNOWLEDGED);
          }

          @Override
          public void close() {}
        });
  }

  private void drainCdc(PostboxTestContext ctx, String label, RelayPublisher publisher)
      throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    String topic = ctx.topic("drain", 3);
    CdcRelay setup =
        CdcRelay.builder(
                ds, ctx.jdbcUrl(), KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .build();
    setup.start();
    setup.close(); // publication and slot exist: the backlog goes into the slot's WAL
    prewrite(ds, topic);
    CdcRelay relay = CdcRelay.builder(ds, ctx.jdbcUrl(), publisher).build();
    long t0 = System.nanoTime();
    relay.start();
    await().atMost(Duration.ofMinutes(5)).until(() -> relay.stats().published() >= EVENTS);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    report(label + " " + relay.stats(), ms);
    relay.close();
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
      ps.setString(1, relay.slotName());
      ps.execute();
      try (Statement s = c.createStatement()) {
        s.execute("DROP PUBLICATION " + relay.publicationName());
      }
    }
  }

  @Test
  void pollingRelay(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    String topic = ctx.topic("drain", 3);
    prewrite(ds, topic);
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ds),
                KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .build();
    long t0 = System.nanoTime();
    relay.start();
    await().atMost(Duration.ofMinutes(5)).until(() -> relay.stats().published() >= EVENTS);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    report("polling " + relay.stats(), ms);
    relay.close();
  }

  private static void report(String relay, long ms) {
    assertThat(ms).isPositive();
    System.out.printf(
        "DRAIN %s: %,d events in %,d ms = %,.0f events/s (rough, one run, shared machine)%n",
        relay, EVENTS, ms, EVENTS * 1000.0 / ms);
  }
}
