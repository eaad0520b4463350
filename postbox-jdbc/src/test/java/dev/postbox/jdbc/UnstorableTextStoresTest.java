package dev.postbox.jdbc;

import static dev.postbox.jdbc.DeadLetterTestData.letter;
import static dev.postbox.jdbc.DeadLetterTestData.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.jdbc.internal.OperatorAudit;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 38, item 2: text PostgreSQL's {@code text} cannot hold (NUL, lone surrogates; invalid UTF-8
 * in a tenant header's bytes) in every text a producer reaches, through the real stores: each write
 * succeeds and reads back exactly (the dead letters, the parking), or is kept escaped (the audit,
 * the dead letter's tenant column). Before the fix each insert failed with SQLSTATE 22021.
 */
@PostboxTest
class UnstorableTextStoresTest {

  private static final Instant T0 = Instant.parse("2024-05-01T10:00:00Z");

  /** Every kind of text a store must survive, ending with one that looks escaped already. */
  private static final List<String> NASTY =
      List.of("ac\u0000me", "\u0000", "x\uD800y", "\uDC00", "a\\0b\u0000", "\\~acme", "plain");

  private DataSource ds;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
  }

  @Test
  void aDeadLetterWithUnstorableTextInEveryTextFieldReadsBackExactly() {
    DeadLetterStore store = PostgresDeadLetterStore.create(ds);
    for (String text : NASTY) {
      NewDeadLetter base = letter("billing", "orders", "k", "fp", T0);
      NewDeadLetter in =
          new NewDeadLetter(
              "billing",
              "orders",
              base.partition(),
              base.offset(),
              base.messageId(),
              Optional.of("order." + text),
              utf8("k" + text),
              base.value(),
              List.of(
                  new Header("ce_tenant", utf8(text)),
                  new Header("name-" + text, utf8(text)),
                  new Header(text, null)),
              base.classification(),
              "java.lang.IllegalStateException",
              "tenant '" + text + "' is not allowed",
              "java.lang.IllegalStateException: " + text + "\n\tat X.y(X.java:1)\n",
              "fp-" + text,
              1,
              T0,
              T0);

      long id = store.add(in);

      assertThat(store.find(id).orElseThrow().letter())
          .as("read back: %s", text)
          .usingRecursiveComparison()
          .isEqualTo(in);
      assertThat(
              store.query(
                  new DeadLetterStore.Query(
                      Optional.of("billing"),
                      Optional.of("orders"),
                      Optional.empty(),
                      Optional.of("fp-" + text),
                      Optional.empty(),
                      Optional.empty(),
                      Optional.empty(),
                      10)))
          .as("found by its fingerprint")
          .extracting(DeadLetterStore.DeadLetter::id)
          .containsExactly(id);
    }
  }

  @Test
  void aTenantHeaderThatIsNotUtf8TextIsShownEscapedInTheTenantColumn() throws SQLException {
    DeadLetterStore store = PostgresDeadLetterStore.create(ds);
    NewDeadLetter base = letter("billing", "orders", "k", "fp", T0);
    long nul = store.add(DeadLetterTestData.withHeaders(base, tenant(utf8("ac\u0000me"))));
    long invalid =
        store.add(DeadLetterTestData.withHeaders(base, tenant(new byte[] {'a', (byte) 0xC3})));
    long valid = store.add(DeadLetterTestData.withHeaders(base, tenant(utf8("acmé"))));

    assertThat(tenantColumn(nul)).isEqualTo("\\~ac\\000me");
    assertThat(tenantColumn(invalid)).isEqualTo("\\~a\\303");
    assertThat(tenantColumn(valid)).isEqualTo("acmé");
    assertThat(store.find(nul).orElseThrow().letter().headers())
        .as("the header itself, byte-identical")
        .isEqualTo(tenant(utf8("ac\u0000me")));
  }

  @Test
  void aParkedSequenceWithUnstorableTextInItsKeyAndHeadersReadsBackExactly() {
    ParkingStore parking = PostgresParkingStore.create(ds);
    for (String text : NASTY) {
      String key = "k-" + text;
      ParkingStore.ParkedRecord head =
          new ParkingStore.ParkedRecord(
              "orders",
              0,
              1,
              utf8(key),
              utf8("{}"),
              List.of(new Header("n-" + text, utf8(text)), new Header(text, null)));
      ParkingStore.ParkedRecord next =
          new ParkingStore.ParkedRecord("orders", 0, 2, utf8(key), utf8("{}"), List.of());

      parking.park("billing", key, head, 0, T0, "failed: " + text);
      assertThat(parking.appendIfParked("billing", key, next)).as("parked: %s", text).isTrue();
      parking.reschedule(
          "billing", key, parking.sequence("billing", key).get(0).id(), 1, T0, "again " + text);

      List<ParkingStore.Parked> seq = parking.sequence("billing", key);
      assertThat(seq).extracting(ParkingStore.Parked::key).containsExactly(key, key);
      assertThat(seq.get(0).record().headers()).isEqualTo(head.headers());
      assertThat(seq.get(0).record().key()).isEqualTo(utf8(key));
      assertThat(
              parking.claimDue("billing", T0.plusSeconds(1), java.time.Duration.ofMinutes(1), 100))
          .contains(key);
      parking.release("billing", key);
    }
  }

  @Test
  void anAuditEntryWithUnstorableTextIsKeptEscaped() throws SQLException {
    try (Connection c = ds.getConnection()) {
      OperatorAudit.write(
          c,
          OperatorAudit.Entry.of("ops\u0000", "DISCARD", "dead letter 1 of key k\u0000", 1)
              .reason("producer sent NUL \u0000")
              .deadLetter(1, Optional.empty(), "billing", "k\u0000"));
      try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT by_whom, what, reason, msg_key FROM postbox_replay_audit ORDER BY id");
          ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).isEqualTo("\\~ops\\0");
        assertThat(rs.getString(2)).isEqualTo("\\~dead letter 1 of key k\\0");
        assertThat(rs.getString(3)).isEqualTo("\\~producer sent NUL \\0");
        assertThat(rs.getString(4)).isEqualTo("\\~k\\0");
      }
    }
  }

  @Test
  void anEntityVersionOfAnEntityWithUnstorableTextIsKeptApartFromLookalikes() throws Exception {
    dev.postbox.core.spi.InboxStore inbox = PostgresInboxStore.create(ds);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertThat(inbox.advanceVersion(c, "e\u0000", 2)).isTrue();
      assertThat(inbox.advanceVersion(c, "e\u0000", 1)).as("not newer").isFalse();
      assertThat(inbox.advanceVersion(c, "x\uD800", 2)).isTrue();
      assertThat(inbox.advanceVersion(c, "x?", 1))
          .as("another entity than the lone surrogate's (the driver alone would write '?')")
          .isTrue();
      c.commit();
    }
  }

  private static List<Header> tenant(byte[] value) {
    return List.of(new Header("ce_tenant", value));
  }

  private String tenantColumn(long id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT tenant FROM postbox_dead_letter WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }
}
