package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.jdbc.CdcSlotState;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.DoubleSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * WAL safety: the slot's lag in bytes and as age (OperationsProbe and its gauges), the start-up
 * warning of an unbounded WAL cap, and a slot dropped under a running relay: detected, reported,
 * created again, and the rows committed while it was gone republished from the table in order.
 */
@PostboxTest
class CdcSlotRecoveryTest {

  private static final Duration ARRIVAL = Duration.ofSeconds(60);

  private final List<CdcRelay> relays = new ArrayList<>();
  private final Outbox outbox = Outbox.postgres();
  private PostboxTestContext ctx;
  private DataSource ds;

  @BeforeEach
  void migrate(PostboxTestContext ctx) {
    this.ctx = ctx;
    this.ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
  }

  @AfterEach
  void dropSlot() throws SQLException {
    relays.forEach(CdcRelay::close);
    if (!relays.isEmpty()) {
      CdcSlots.drop(ds, relays.get(0).slotName(), relays.get(0).publicationName());
    }
  }

  private CdcRelay relay(String id, DataSource source, RecordingPublisher publisher) {
    CdcRelay r =
        CdcRelay.builder(source, ctx.jdbcUrl(), publisher)
            .instanceId(id)
            .batchSize(50)
            .standbyRetryInterval(Duration.ofMillis(100))
            .backoff(new Backoff(Duration.ofMillis(20), Duration.ofMillis(200), 2, 0.5))
            .build();
    relays.add(r);
    r.start();
    return r;
  }

  private List<Message> write(int count, int from) {
    List<Message> all = new ArrayList<>();
    for (int n = from; n < from + count; n++) {
      Message m =
          Message.builder("orders", "order.created")
              .key("k" + (n % 4))
              .jsonPayload("{\"n\":" + n + "}")
              .build();
      outbox.inTransaction(
          ds,
          w -> {
            w.write(m);
            return null;
          });
      all.add(m);
    }
    return all;
  }

  @Test
  void aSlotDroppedUnderARunningRelayIsCreatedAgainAndItsGapRepublishedFromTheTableInOrder()
      throws Exception {
    PausableDataSource source = new PausableDataSource(ds);
    RecordingPublisher publisher = new RecordingPublisher();
    CdcRelay relay = relay("r", source, publisher);
    await().atMost(ARRIVAL).until(relay::active);
    List<Message> written = new ArrayList<>(write(20, 0));
    await().atMost(ARRIVAL).until(() -> relay.stats().marked() == 20);

    source.paused(true); // keeps the gap open: the relay cannot recover before the rows are in
    dropUnder(relay.slotName());
    List<Message> gap = write(30, 20); // committed while no slot exists: no stream carries them
    written.addAll(gap);
    assertThat(OperationsProbe.postgres(ds).cdcSlots())
        .singleElement()
        .satisfies(s -> assertThat(s.lost()).isTrue());
    source.paused(false);

    await().atMost(ARRIVAL).until(() -> publisher.acknowledged().containsAll(gap));
    await().atMost(ARRIVAL).until(() -> pending() == 0);
    assertThat(relay.stats().slotRecoveries()).isEqualTo(1);
    assertThat(relay.stats().republishedFromTable()).isGreaterThanOrEqualTo(30);

    List<Message> after = write(10, 50); // streamed by the new slot
    written.addAll(after);
    await().atMost(ARRIVAL).until(() -> publisher.acknowledged().containsAll(after));
    CdcRelayTest.assertPerKeyOrderOfFirstOccurrences(publisher.acknowledged(), List.of(), written);

    CdcSlotState state = OperationsProbe.postgres(ds).cdcSlots().get(0);
    assertThat(state.slot()).isEqualTo(relay.slotName());
    assertThat(state.present()).isTrue();
    assertThat(state.lost()).isFalse();
    assertThat(state.recoveries()).isEqualTo(1);
  }

  @Test
  void theProbeReportsTheSlotsLagInBytesAndAsAgeWhileNoRelayRuns() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    CdcRelay relay = relay("r", ds, publisher);
    if ("-1".equals(show("max_slot_wal_keep_size"))) {
      assertThat(relay.startupWarnings())
          .singleElement()
          .asString()
          .contains("max_slot_wal_keep_size is unbounded");
    }
    await().atMost(ARRIVAL).until(relay::active);
    write(5, 0);
    await().atMost(ARRIVAL).until(() -> relay.stats().marked() == 5);
    relay.close();
    write(20, 5); // nobody streams the slot now

    Map<String, DoubleSupplier> gauges = new ConcurrentHashMap<>();
    PostboxMetrics metrics =
        new PostboxMetrics() {
          @Override
          public Counter counter(MetricName name, Tags tags) {
            return n -> {};
          }

          @Override
          public Timer timer(MetricName name, Tags tags) {
            return d -> {};
          }

          @Override
          public void gauge(MetricName name, Tags tags, DoubleSupplier value) {
            gauges.put(name.metricName(), value);
          }
        };
    OperationsProbe probe =
        OperationsProbe.builder(ds).cacheFor(Duration.ZERO).build().bindTo(metrics);
    CdcSlotState state = probe.cdcSlots().get(0);
    assertThat(state.active()).isFalse();
    assertThat(state.lagBytes()).isPositive();
    // the age keeps growing while nobody streams
    await()
        .atMost(ARRIVAL)
        .until(() -> probe.cdcSlots().get(0).lagAge().compareTo(Duration.ofSeconds(3)) > 0);
    assertThat(gauges.get("postbox.cdc.slot.lag").getAsDouble()).isPositive();
    assertThat(gauges.get("postbox.cdc.slot.lag.age").getAsDouble()).isGreaterThan(3);
    assertThat(gauges.get("postbox.cdc.slot.lost").getAsDouble()).isZero();
  }

  /** Ends the walsender and drops the slot, again until the relay's reconnect does not win. */
  private void dropUnder(String slot) throws Exception {
    await()
        .atMost(ARRIVAL)
        .pollInterval(Duration.ofMillis(5))
        .until(() -> {
          try (Connection c = ds.getConnection();
              PreparedStatement end =
                  c.prepareStatement(
                      "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                          + " WHERE slot_name = ? AND active_pid IS NOT NULL");
              PreparedStatement drop =
                  c.prepareStatement(
                      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                          + " WHERE slot_name = ?")) {
            end.setString(1, slot);
            end.execute();
            drop.setString(1, slot);
            drop.execute();
            return true;
          } catch (SQLException e) {
            return false; // still active: the relay reconnected first
          }
        });
  }

  private String show(String setting) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private long pending() throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL"
                    + " AND failed_at IS NULL")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
