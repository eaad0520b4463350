package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.testkit.PostgresPair;
import java.sql.Connection;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The polling relay across a PostgreSQL failover: a primary with a streaming standby ({@link
 * PostgresPair}), the relay and the writers on one pool through the pair's multi-host URL ({@code
 * targetServerType=primary}). The primary is killed ({@code kill -9}) while the relay has rows to
 * publish, the standby is promoted, writers go on; every outbox row the new primary holds is
 * published, in its key's order. The kill comes while a batch is at the broker (acknowledged after
 * the primary died): its rows are published again from the new primary, the at-least-once
 * duplicates the inbox absorbs. With a synchronous standby every row whose commit returned is on
 * the new primary; with an asynchronous one the rows PostgreSQL itself lost are counted (committed
 * on the old primary, never replicated), not blamed on the relay.
 */
@Tag("integration")
class PostgresFailoverIT {

  private static final Duration WAIT = Duration.ofSeconds(180);
  private static final int BEFORE = 300;
  private static final int AFTER = 100;
  private static final int PER_TX = 5;
  private static final int KEYS = 7;

  private final Outbox outbox = Outbox.postgres();

  @ParameterizedTest(name = "synchronous={0}")
  @ValueSource(booleans = {true, false})
  void relayPublishesEveryRowTheNewPrimaryHoldsAfterKillAndPromote(boolean synchronous)
      throws Exception {
    try (PostgresPair pair = PostgresPair.builder().synchronous(synchronous).build()) {
      pair.start();
      String schema = pair.current().createSchema("failover");
      List<Message> published = new CopyOnWriteArrayList<>();
      GatedPublisher gate = new GatedPublisher(published);
      try (HikariDataSource ds = pair.current().dataSource(schema, 4)) {
        PostboxMigrations.migrate(ds);
        try (Relay relay =
            Relay.builder(PostgresRelayStore.create(ds), gate)
                .batchSize(20)
                .pollInterval(Duration.ofMillis(100))
                .backoff(new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 2, 0.5))
                .build()) {
          List<Message> written = write(ds, 0, BEFORE);
          relay.start();
          // the kill comes while the relay's second batch is at the broker: acknowledged after
          // the primary died, so its rows cannot be marked there
          assertThat(gate.inFlight.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
          int publishedAtKill = published.size();
          pair.killPrimary();
          gate.release.countDown();
          pair.promote();
          await().atMost(WAIT).ignoreExceptions().until(() -> selectOne(ds));
          written.addAll(write(ds, BEFORE, AFTER));

          Set<UUID> onNewPrimary = outboxIds(ds);
          await()
              .atMost(WAIT)
              .until(() -> ids(published).containsAll(onNewPrimary) && unpublished(ds) == 0);

          Set<UUID> writtenIds = ids(written);
          Set<UUID> lostByPostgres = new HashSet<>(writtenIds);
          lostByPostgres.removeAll(onNewPrimary);
          if (synchronous) {
            assertThat(lostByPostgres).as("commits the synchronous standby lost").isEmpty();
          }
          // nothing on the new primary is published out of its key's order (first publications)
          assertKeyOrder(written, published, onNewPrimary);
          int duplicates = published.size() - ids(published).size();
          System.out.printf(
              "failover synchronous=%s: publishedAtKill=%d inFlightAtKill=%d written=%d onNewPrimary=%d lostByPostgres=%d"
                  + " published=%d distinct=%d duplicates=%d relayPublished=%d%n",
              synchronous,
              publishedAtKill,
              gate.inFlightSize,
              writtenIds.size(),
              onNewPrimary.size(),
              lostByPostgres.size(),
              published.size(),
              ids(published).size(),
              duplicates,
              relay.stats().published());
        }
      }
    }
  }

  private List<Message> write(DataSource ds, int from, int count) {
    List<Message> all = new ArrayList<>();
    for (int t = 0; t < count / PER_TX; t++) {
      List<Message> tx = new ArrayList<>();
      for (int i = 0; i < PER_TX; i++) {
        int n = from + t * PER_TX + i;
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

  private static void assertKeyOrder(
      List<Message> written, List<Message> published, Set<UUID> onNewPrimary) {
    Map<String, List<UUID>> expected = new LinkedHashMap<>();
    for (Message m : written) {
      if (onNewPrimary.contains(m.id())) {
        expected.computeIfAbsent(m.key().orElseThrow(), k -> new ArrayList<>()).add(m.id());
      }
    }
    Map<String, List<UUID>> actual = new LinkedHashMap<>();
    Set<UUID> seen = new HashSet<>();
    for (Message m : published) {
      if (onNewPrimary.contains(m.id()) && seen.add(m.id())) {
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

  private static boolean selectOne(DataSource ds) throws SQLException {
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

  /**
   * Records what it acknowledges; its second call waits, once, until the test has killed the
   * primary, so that a batch is in flight at the broker when the database fails over.
   */
  private static final class GatedPublisher implements RelayPublisher {
    final CountDownLatch inFlight = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    private final List<Message> published;
    private final AtomicInteger calls = new AtomicInteger();
    volatile int inFlightSize;

    GatedPublisher(List<Message> published) {
      this.published = published;
    }

    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      if (calls.incrementAndGet() == 2) {
        inFlightSize = messages.size();
        inFlight.countDown();
        try {
          if (!release.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new IllegalStateException("the test never released the gate");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
      }
      published.addAll(messages);
      List<PublishOutcome> out = new ArrayList<>(messages.size());
      messages.forEach(m -> out.add(PublishOutcome.ACKNOWLEDGED));
      return out;
    }

    @Override
    public void close() {}
  }
}
