package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostgresPair;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The CDC relay across a PostgreSQL failover with its slot created as a failover slot ({@code
 * failoverSlot(true)}): the standby of a synchronous {@link PostgresPair} synchronises the slot;
 * the primary is killed ({@code kill -9}) while 50 committed rows are unacknowledged by the broker
 * (so unconfirmed on the slot), the standby promoted; the relay, on the multi-host URL, resumes
 * from the synchronised slot on the new primary (no slot recovery, no republication from the table)
 * and publishes every row the new primary holds, in its key's order.
 */
@Tag("integration")
class CdcFailoverIT {

  private static final Duration WAIT = Duration.ofSeconds(180);
  private static final int KEYS = 7;

  private final Outbox outbox = Outbox.postgres();

  @Test
  void resumesFromTheSynchronisedFailoverSlotOnThePromotedStandby() throws Exception {
    try (PostgresPair pair = PostgresPair.builder().synchronous(true).build()) {
      pair.start();
      String schema = pair.current().createSchema("cdc_failover");
      String url = pair.current().jdbcUrl(schema);
      RecordingPublisher publisher = new RecordingPublisher();
      try (HikariDataSource ds = pair.current().dataSource(schema, 4)) {
        PostboxMigrations.migrate(ds);
        CdcRelay relay =
            CdcRelay.builder(ds, url, publisher)
                .instanceId("r1")
                .failoverSlot(true)
                .batchSize(50)
                .statusInterval(Duration.ofMillis(200))
                .standbyRetryInterval(Duration.ofMillis(100))
                .backoff(new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 2, 0.5))
                .build();
        try {
          relay.start();
          assertThat(relay.startupWarnings()).noneMatch(w -> w.contains("synchronized_standby"));
          List<Message> written = write(ds, 0, 200);
          await().atMost(WAIT).until(() -> publisher.acknowledged().size() >= 200);
          // the standby's copy of the slot: synchronised, not a temporary one still catching up
          await()
              .atMost(WAIT)
              .until(() -> {
                exec(ds, "SELECT pg_log_standby_snapshot()");
                return syncedOnStandby(pair, relay.slotName());
              });
          // the broker takes 50 of the next 100 rows: 50 committed rows are unacknowledged, so
          // unconfirmed on the slot, when the primary dies
          publisher.failAfter(250);
          written.addAll(write(ds, 200, 100));
          await().atMost(WAIT).until(() -> publisher.acknowledged().size() == 250);
          pair.killPrimary();
          publisher.failAfter(Integer.MAX_VALUE);
          pair.promote();
          await().atMost(WAIT).ignoreExceptions().until(() -> isPrimary(ds));
          written.addAll(write(ds, 300, 100));

          Set<UUID> onNewPrimary = outboxIds(ds);
          assertThat(onNewPrimary).hasSize(400); // synchronous standby: no commit lost
          await()
              .atMost(WAIT)
              .until(() ->
                  ids(publisher.acknowledged()).containsAll(onNewPrimary) && unpublished(ds) == 0);
          assertKeyOrder(written, publisher.acknowledged());
          CdcRelay.Stats stats = relay.stats();
          assertThat(stats.slotRecoveries()).as("slot recoveries").isZero();
          assertThat(stats.republishedFromTable()).isZero();
          List<Message> acked = publisher.acknowledged();
          System.out.printf(
              "cdc failover: written=%d published=%d distinct=%d duplicates=%d stats=%s%n",
              written.size(),
              acked.size(),
              ids(acked).size(),
              acked.size() - ids(acked).size(),
              stats);
        } finally {
          relay.close();
        }
      }
    }
  }

  private List<Message> write(DataSource ds, int from, int count) {
    List<Message> all = new ArrayList<>();
    for (int t = 0; t < count / 5; t++) {
      List<Message> tx = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        int n = from + t * 5 + i;
        tx.add(
            Message.builder("orders", "order.created")
                .key("k" + (n % KEYS))
                .header("n", Integer.toString(n))
                .jsonPayload("{\"n\":" + n + "}")
                .build());
      }
      outbox.inTransaction(
          ds,
          w -> {
            w.writeAll(tx);
            return null;
          });
      all.addAll(tx);
    }
    return all;
  }

  private static boolean syncedOnStandby(PostgresPair pair, String slot) throws SQLException {
    try (Connection c = DriverManager.getConnection(pair.standby().jdbcUrl());
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name = '"
                    + slot
                    + "' AND synced AND NOT temporary")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private static void assertKeyOrder(List<Message> written, List<Message> published) {
    Map<String, List<UUID>> expected = new LinkedHashMap<>();
    written.forEach(
        m -> expected.computeIfAbsent(m.key().orElseThrow(), k -> new ArrayList<>()).add(m.id()));
    Map<String, List<UUID>> actual = new LinkedHashMap<>();
    Set<UUID> seen = new HashSet<>();
    for (Message m : published) {
      if (seen.add(m.id())) {
        actual.computeIfAbsent(m.key().orElseThrow(), k -> new ArrayList<>()).add(m.id());
      }
    }
    assertThat(actual).isEqualTo(expected);
  }

  private static Set<UUID> ids(List<Message> messages) {
    Set<UUID> ids = new HashSet<>();
    messages.forEach(m -> ids.add(m.id()));
    return ids;
  }

  private static void exec(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static boolean isPrimary(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT NOT pg_is_in_recovery()")) {
      return rs.next() && rs.getBoolean(1);
    }
  }

  private static Set<UUID> outboxIds(DataSource ds) throws SQLException {
    Set<UUID> ids = new HashSet<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT message_id FROM postbox_outbox")) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  private static long unpublished(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
