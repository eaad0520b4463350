package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CDC relay against the test kit's PostgreSQL ({@code wal_level=logical}) with a recording
 * publisher: order, rolled-back transactions, restart after an unconfirmed tail, standby take-over,
 * and the set-up errors. The Kafka end-to-end tests are in postbox-kafka ({@code CdcRelayIT}).
 */
@PostboxTest
class CdcRelayTest {

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

  private CdcRelay relay(String id, RecordingPublisher publisher) {
    return relay(id, publisher, CdcRelay.DEFAULT_BINARY_VALUES);
  }

  private CdcRelay relay(String id, RecordingPublisher publisher, boolean binaryValues) {
    CdcRelay r =
        CdcRelay.builder(ds, ctx.jdbcUrl(), publisher)
            .instanceId(id)
            .binaryValues(binaryValues)
            .batchSize(50)
            .standbyRetryInterval(Duration.ofMillis(100))
            .backoff(new Backoff(Duration.ofMillis(20), Duration.ofMillis(200), 2, 0.5))
            .build();
    relays.add(r);
    r.start();
    return r;
  }

  /** Writes {@code transactions} transactions of {@code perTx} messages over {@code keys} keys. */
  private List<Message> write(int transactions, int perTx, int keys, int from) {
    List<Message> all = new ArrayList<>();
    for (int t = 0; t < transactions; t++) {
      List<Message> tx = new ArrayList<>();
      for (int i = 0; i < perTx; i++) {
        int n = from + t * perTx + i;
        tx.add(
            Message.builder("orders", "order.created")
                .key("k" + (n % keys))
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

  @Test
  void publishesCommittedRowsInCommitOrderAndMarksThem() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    relay("r1", publisher);
    List<Message> written = write(60, 5, 7, 0); // 300 rows, 5 per transaction, 7 keys
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      outbox.write(c, Message.builder("orders", "rolled.back").key("k1").build());
      c.rollback();
    }
    List<Message> more = write(1, 1, 7, 300);
    await().atMost(ARRIVAL).until(() -> publisher.acknowledged().size() >= 301);
    List<Message> expected = new ArrayList<>(written);
    expected.addAll(more);
    assertThat(publisher.acknowledged()).containsExactlyElementsOf(expected);
    await().atMost(ARRIVAL).until(() -> count("published_at IS NULL") == 0);
    assertThat(count("published_at IS NOT NULL")).isEqualTo(301);
  }

  /**
   * Every field of the envelope survives the stream in both value forms: binary (timestamps as
   * microseconds, the payload's own bytes, jsonb with its version byte) and text (formatted
   * timestamps, hex bytea); then a row the envelope rejects comes back unpublishable, not as an
   * error. The table also carries a column of a type with no binary send function ({@code
   * aclitem}): in binary mode the server sends that one column as text amid binary values.
   */
  @ParameterizedTest(name = "binaryValues={0}")
  @ValueSource(booleans = {true, false})
  void everyFieldSurvivesTheStreamInBothValueForms(boolean binaryValues) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "ALTER TABLE postbox_outbox ADD COLUMN app_acl aclitem"
              + " DEFAULT makeaclitem(0, 10, 'SELECT', false)");
    }
    RecordingPublisher publisher = new RecordingPublisher();
    CdcRelay r = relay("r1", publisher, binaryValues);
    Message full =
        Message.builder("orders", "order.created")
            .schemaVersion(3)
            .key("k-\u00e9\u6f22")
            .occurredAt(Instant.parse("1999-12-31T23:59:59.999999Z"))
            .source("/shop/\u00fc")
            .correlationId("corr-1")
            .causationId("cause-1")
            .tenant("tenant-a")
            .header("trace", "a\"b")
            .header("n", "1")
            .payload(
                new Payload(
                    new byte[] {0, (byte) 0xff, 0x5c, 0x78, 10}, "application/octet-stream"))
            .build();
    Message bare =
        Message.builder("orders", "order.created")
            .occurredAt(Instant.parse("2026-12-02T16:00:00.000001Z"))
            .payload(new Payload(new byte[0], "application/octet-stream"))
            .build();
    outbox.inTransaction(
        ds,
        w -> {
          w.writeAll(List.of(full, bare));
          return null;
        });
    await().atMost(ARRIVAL).until(() -> publisher.acknowledged().size() >= 2);
    assertThat(publisher.acknowledged()).containsExactly(full, bare);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "INSERT INTO postbox_outbox (message_id, topic, msg_key, lane, type, schema_version,"
              + " occurred_at, source, headers, content_type, payload) VALUES"
              + " (gen_random_uuid(), 'orders', 'k9', 0, 'order.created', 1, 'infinity', '/shop',"
              + " NULL, 'application/json', '\\x7b7d')");
    }
    await().atMost(ARRIVAL).until(() -> r.stats().unpublishable() >= 1);
    assertThat(publisher.acknowledged()).hasSize(2);
  }

  @Test
  void aRestartRepublishesOnlyTheUnconfirmedTailInOrder() throws Exception {
    RecordingPublisher first = new RecordingPublisher();
    first.failAfter(130); // the broker takes 130 rows, then goes away
    CdcRelay r1 = relay("r1", first);
    List<Message> written = write(50, 4, 5, 0); // 200 rows
    await().atMost(ARRIVAL).until(() -> first.acknowledged().size() == 130);
    await().atMost(ARRIVAL).until(() -> r1.stats().marked() == 130);
    r1.close(); // rows from the 131st on were never acknowledged: not confirmed
    RecordingPublisher second = new RecordingPublisher();
    relay("r2", second);
    await().atMost(ARRIVAL).until(() -> second.acknowledged().size() >= 70);
    List<Message> again = second.acknowledged();
    // the tail starts at a transaction boundary at or before the 131st row: at most 3 rows of the
    // half-done transaction come again, nothing before it
    int start = written.indexOf(again.get(0));
    assertThat(start).isBetween(128, 130);
    assertThat(again).containsExactlyElementsOf(written.subList(start, written.size()));
    assertPerKeyOrderOfFirstOccurrences(first.acknowledged(), second.acknowledged(), written);
  }

  @Test
  void aStandbyTakesOverWhenTheActiveInstanceGoes() throws Exception {
    RecordingPublisher a = new RecordingPublisher();
    RecordingPublisher b = new RecordingPublisher();
    CdcRelay active = relay("a", a);
    await().atMost(ARRIVAL).until(active::active);
    CdcRelay standby = relay("b", b);
    List<Message> before = write(10, 3, 4, 0);
    await().atMost(ARRIVAL).until(() -> a.acknowledged().size() == 30);
    assertThat(standby.active()).isFalse();
    assertThat(b.acknowledged()).isEmpty();
    active.close();
    await().atMost(ARRIVAL).until(standby::active);
    List<Message> after = write(10, 3, 4, 30);
    await().atMost(ARRIVAL).until(() -> b.acknowledged().size() >= 30);
    assertThat(a.acknowledged()).containsExactlyElementsOf(before);
    assertThat(b.acknowledged()).containsExactlyElementsOf(after);
  }

  @Test
  void refusesARoleWithoutReplication() throws Exception {
    String role = "norepl_" + ctx.schema().substring(ctx.schema().length() - 8);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE ROLE " + role + " LOGIN NOREPLICATION");
      s.execute("GRANT ALL ON SCHEMA " + ctx.schema() + " TO " + role);
    }
    String url = ctx.jdbcUrl().replaceFirst("user=[^&]*", "user=" + role);
    try (var roleDs = new com.zaxxer.hikari.HikariDataSource()) {
      roleDs.setJdbcUrl(url);
      roleDs.setMaximumPoolSize(1);
      CdcRelay r = CdcRelay.builder(roleDs, url, new RecordingPublisher()).build();
      assertThatThrownBy(r::start)
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("lacks the REPLICATION attribute")
          .hasMessageContaining("ALTER ROLE " + role + " REPLICATION");
      r.close();
    } finally {
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute("REVOKE ALL ON SCHEMA " + ctx.schema() + " FROM " + role);
        s.execute("DROP ROLE " + role);
      }
    }
  }

  @Test
  void theBuilderRefusesBadNamesAndSettings() {
    RecordingPublisher p = new RecordingPublisher();
    assertThatThrownBy(() -> CdcRelay.builder(ds, ctx.jdbcUrl(), p).slotName("Bad-Name").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("slotName");
    assertThatThrownBy(() -> CdcRelay.builder(ds, ctx.jdbcUrl(), p).batchSize(0).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () -> CdcRelay.builder(ds, ctx.jdbcUrl(), p).batchLinger(Duration.ofMillis(-1)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchLinger");
    assertThatThrownBy(
            () -> CdcRelay.builder(ds, ctx.jdbcUrl(), p).batchLinger(Duration.ofSeconds(2)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchLinger");
    assertThatThrownBy(() -> CdcRelay.builder(ds, "jdbc:mysql://x", p).build())
        .isInstanceOf(IllegalArgumentException.class);
    String slot = CdcRelay.builder(ds, ctx.jdbcUrl(), p).build().slotName();
    assertThat(slot).startsWith("postbox_cdc_thebuilder").hasSizeLessThanOrEqualTo(63);
    assertThat(CdcRelay.Builder.defaultName("app")).isEqualTo("postbox_cdc_app");
    assertThat(CdcRelay.Builder.defaultName("App")).startsWith("postbox_cdc_app_").hasSize(24);
  }

  /**
   * {@code failoverSlot(true)} on a server with no standby: the slot is created as a failover slot,
   * and the relay warns that nothing synchronises it ({@code synchronized_standby_slots} empty).
   */
  @Test
  void aFailoverSlotIsCreatedAsOneAndWarnedAboutWithoutAStandby() throws Exception {
    CdcRelay r =
        CdcRelay.builder(ds, ctx.jdbcUrl(), new RecordingPublisher())
            .instanceId("r1")
            .failoverSlot(true)
            .build();
    relays.add(r);
    r.start();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT failover FROM pg_replication_slots WHERE slot_name = '"
                    + r.slotName()
                    + "'")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getBoolean(1)).isTrue();
    }
    assertThat(r.startupWarnings())
        .anyMatch(w -> w.contains("synchronized_standby_slots is empty"));
  }

  private long count(String where) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM postbox_outbox WHERE " + where)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Per key, the first time each message was published follows the written order; none lost. */
  static void assertPerKeyOrderOfFirstOccurrences(
      List<Message> firstRun, List<Message> secondRun, List<Message> written) {
    Set<Message> firsts = new LinkedHashSet<>(firstRun);
    firsts.addAll(secondRun);
    assertThat(firsts).containsExactlyInAnyOrderElementsOf(written);
    Map<String, List<Message>> byKey = new HashMap<>();
    for (Message m : firsts) {
      byKey.computeIfAbsent(m.key().orElseThrow(), k -> new ArrayList<>()).add(m);
    }
    for (Map.Entry<String, List<Message>> e : byKey.entrySet()) {
      List<Message> expected =
          written.stream().filter(m -> m.key().orElseThrow().equals(e.getKey())).toList();
      assertThat(e.getValue()).as("key " + e.getKey()).containsExactlyElementsOf(expected);
    }
  }
}
