package dev.postbox.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.FakeTime;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.ReplayRoute;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The operations API against PostgreSQL: groups, filters and keyset paging, a letter's detail, and
 * every action with its audit row.
 */
@PostboxTest
class PostboxAdminIT {

  private static final Instant T0 = Instant.parse("2026-11-30T10:00:00Z");

  private DataSource ds;
  private DeadLetterStore store;
  private PostboxAdmin admin;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresDeadLetterStore.create(ds);
    FakeTime time = FakeTime.startingAt(T0);
    admin =
        PostboxAdmin.builder(ds)
            .decoder(AdminFixtures.DECODER)
            .clock(time.clock())
            .sleeper(time)
            .build();
  }

  private long add(String consumer, String key, String error, String tenant, int minute) {
    return store.add(
        AdminFixtures.letter(
            consumer, "orders", key, error, tenant, T0.plusSeconds(60L * minute), "{\"n\":1}"));
  }

  @Test
  void groupsFiltersAndPagesWithoutRepeatsOrGaps() {
    for (int i = 0; i < 30; i++) {
      add(
          i % 2 == 0 ? "billing" : "shipping",
          "k" + (i % 5),
          "com.x.E" + (i % 3),
          "t" + (i % 2),
          i);
    }
    Page<DeadLetterGroup> groups = admin.groups(DeadLetterFilter.all(), PageRequest.first(2));
    assertThat(groups.items()).hasSize(2);
    Page<DeadLetterGroup> rest =
        admin.groups(DeadLetterFilter.all(), PageRequest.after(groups.next().orElseThrow(), 10));
    assertThat(rest.items()).hasSize(1);
    assertThat(rest.next()).isEmpty();
    List<DeadLetterGroup> all = new ArrayList<>(groups.items());
    all.addAll(rest.items());
    assertThat(all).extracting(DeadLetterGroup::count).containsOnly(10L);
    assertThat(all)
        .extracting(DeadLetterGroup::errorClass)
        .containsExactlyInAnyOrder("com.x.E0", "com.x.E1", "com.x.E2");
    DeadLetterGroup g = all.get(0);
    assertThat(g.consumers()).containsExactly("billing", "shipping");
    assertThat(g.lastSeen()).isAfter(g.firstSeen());
    assertThat(g.pending()).isEqualTo(10);
    assertThat(g.topic()).isEqualTo("orders");
    assertThat(g.sampleError()).isPresent();
    // a filter only the letters can answer (tenant) aggregates them: the same groups, halved
    List<DeadLetterGroup> t0 =
        admin
            .groups(DeadLetterFilter.builder().tenant("t0").build(), PageRequest.first(10))
            .items();
    assertThat(t0).extracting(DeadLetterGroup::count).containsOnly(5L);
    assertThat(t0)
        .extracting(DeadLetterGroup::fingerprint)
        .containsExactlyInAnyOrderElementsOf(
            all.stream().map(DeadLetterGroup::fingerprint).toList());

    // every filter narrows, and pages of 4 cover the matches once
    DeadLetterFilter f =
        DeadLetterFilter.builder()
            .consumer("billing")
            .tenant("t0")
            .status(Status.PENDING)
            .from(T0)
            .to(T0.plusSeconds(3600))
            .build();
    Set<Long> seen = new HashSet<>();
    Optional<String> cursor = Optional.empty();
    do {
      Page<DeadLetterSummary> p = admin.deadLetters(f, new PageRequest(4, cursor));
      p.items().forEach(d -> assertThat(seen.add(d.id())).as("no repeats").isTrue());
      assertThat(p.items())
          .allSatisfy(d -> {
            assertThat(d.consumer()).isEqualTo("billing");
            assertThat(d.tenant()).contains("t0");
          });
      cursor = p.next();
    } while (cursor.isPresent());
    assertThat(seen).hasSize(15);
    assertThat(
            admin
                .deadLetters(
                    DeadLetterFilter.builder()
                        .errorClass("com.x.E1")
                        .key("k1")
                        .type("order.placed")
                        .build(),
                    PageRequest.first(100))
                .items())
        .hasSize(2)
        .allSatisfy(d -> assertThat(d.key()).contains("k1"));
    List<DeadLetterSummary> newestFirst =
        admin.deadLetters(DeadLetterFilter.all(), PageRequest.first(3)).items();
    assertThat(newestFirst.get(0).firstFailure()).isAfter(newestFirst.get(2).firstFailure());
    // a bad cursor is bad input (a front end's 400), not a database failure
    assertThatThrownBy(() -> admin.deadLetters(DeadLetterFilter.all(), PageRequest.after("%%", 3)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void detailShowsHeadersPayloadHistoryAuditAndTrace() {
    long id = add("billing", "k1", "com.x.Bad", "acme", 0);
    DeadLetterDetail d = admin.deadLetter(id).orElseThrow();
    assertThat(d.summary().tenant()).contains("acme");
    assertThat(d.headers())
        .extracting(DeadLetterDetail.Header::name)
        .containsExactly("ce_type", "ce_tenant", "content-type");
    assertThat(d.payloadText()).contains("{\"n\":1}");
    assertThat(d.contentType()).contains("application/json");
    assertThat(d.stackTrace().orElseThrow()).contains("Handler.java:42");
    assertThat(d.history()).hasSize(1);
    assertThat(d.trace().orElseThrow().steps()).isNotEmpty();
    assertThat(admin.deadLetter(id + 1000)).isEmpty();
  }

  @Test
  void revealingAPayloadIsAuditedAndChangesNothing() {
    long id = add("billing", "k1", "com.x.Bad", null, 0);
    admin.as("frank").revealPayload(id);
    List<AuditEntry> rows =
        admin.audit(AuditFilter.all().deadLetter(id), PageRequest.first(10)).items();
    assertThat(rows).hasSize(1);
    AuditEntry row = rows.get(0);
    assertThat(row.actor()).isEqualTo("frank");
    assertThat(row.action()).isEqualTo("REVEAL_PAYLOAD");
    assertThat(row.howMany()).isZero();
    assertThat(row.consumer()).contains("billing");
    assertThat(row.messageId()).isEqualTo(admin.deadLetter(id).orElseThrow().summary().messageId());
    assertThat(admin.deadLetter(id).orElseThrow().summary().status()).isEqualTo(Status.PENDING);
    assertThatThrownBy(() -> admin.as("frank").revealPayload(id + 1000))
        .isInstanceOf(NoSuchElementException.class);
  }

  @Test
  void aMessageIdFindsItsLetters() {
    long id = add("billing", "k1", "com.x.Bad", null, 0);
    add("billing", "k2", "com.x.Bad", null, 1);
    UUID message = admin.deadLetter(id).orElseThrow().summary().messageId().orElseThrow();
    DeadLetterFilter byMessage = DeadLetterFilter.builder().messageId(message).build();
    assertThat(admin.deadLetters(byMessage, PageRequest.first(10)).items())
        .extracting(DeadLetterSummary::id)
        .containsExactly(id);
    assertThat(admin.groups(byMessage, PageRequest.first(10)).items())
        .extracting(DeadLetterGroup::count)
        .containsExactly(1L);
    assertThat(byMessage.toBuilder().build()).isEqualTo(byMessage);
  }

  @Test
  void everyActionIsDoneForItsActorAndAudited() throws Exception {
    long one = add("billing", "k1", "com.x.Bad", null, 0);
    long two = add("billing", "k2", "com.x.Bad", null, 1);
    long three = add("billing", "k3", "com.x.Other", null, 2);
    long four = add("billing", "k4", "com.x.Other", null, 3);
    long five = add("shipping", "k5", "com.x.Third", null, 4);

    ReplayResult r = admin.as("alice").replay(one);
    assertThat(r.replayed()).containsExactly(one);

    ReplayResult group =
        admin.as("bob").replayAll(DeadLetterFilter.builder().errorClass("com.x.Bad").build());
    assertThat(group.replayed()).containsExactly(two);

    UUID copy =
        admin
            .as("carol")
            .edit(three, "{\"n\":2}".getBytes(StandardCharsets.UTF_8), Optional.empty(), "fix n");
    DeadLetterDetail edited = admin.deadLetter(three).orElseThrow();
    assertThat(edited.summary().status()).isEqualTo(Status.DISCARDED);
    assertThat(
            query(
                "SELECT causation_id || '|' || convert_from(payload, 'UTF8') FROM postbox_outbox"
                    + " WHERE message_id = '"
                    + copy
                    + "'"))
        .containsExactly(edited.summary().messageId().orElseThrow() + "|{\"n\":2}");

    admin.as("dave").discard(four, "test order");
    assertThatThrownBy(() -> admin.as("dave").discard(four, "again"))
        .isInstanceOf(IllegalStateException.class);
    assertThat(
            admin
                .as("erin")
                .discardAll(DeadLetterFilter.builder().consumer("shipping").build(), "obsolete"))
        .isEqualTo(1);

    // parked: release a key, skip the head of another
    ParkingStore parking = PostgresParkingStore.create(ds);
    ParkingStore.ParkedRecord rec =
        new ParkingStore.ParkedRecord(
            "orders",
            0,
            7,
            "p1".getBytes(StandardCharsets.UTF_8),
            "{}".getBytes(StandardCharsets.UTF_8),
            List.of(
                new DeadLetterStore.Header(
                    "ce_id",
                    "0b8d5d3e-7a36-4a0e-9a40-3b1f4c7e9a11".getBytes(StandardCharsets.UTF_8))));
    parking.park("billing", "p1", rec, 1, Instant.parse("9999-01-01T00:00:00Z"), "boom");
    parking.park("billing", "p2", rec, 0, Instant.parse("9999-01-01T00:00:00Z"), "boom");
    parking.appendIfParked("billing", "p2", rec);
    List<ParkedKey> keys = admin.parkedKeys(Optional.empty(), PageRequest.first(10)).items();
    assertThat(keys).extracting(ParkedKey::key).containsExactly("p1", "p2");
    assertThat(keys.get(1).messages()).isEqualTo(2);
    assertThat(keys).allSatisfy(k -> assertThat(k.blocked()).isTrue());
    assertThat(keys).allSatisfy(k -> assertThat(k.due()).isFalse());
    assertThat(admin.as("frank").releaseParked("billing", "p1")).isEqualTo(1);
    long skipped = admin.as("grace").skipParked("billing", "p2", "bad head");
    assertThat(admin.deadLetter(skipped).orElseThrow().summary().status())
        .isEqualTo(Status.DISCARDED);
    assertThat(admin.deadLetter(skipped).orElseThrow().summary().messageId())
        .contains(UUID.fromString("0b8d5d3e-7a36-4a0e-9a40-3b1f4c7e9a11"));
    List<ParkedKey> after = admin.parkedKeys(Optional.of("billing"), PageRequest.first(10)).items();
    assertThat(after).allSatisfy(k -> assertThat(k.blocked()).isFalse());
    // released, and skipped past its head: due now (read with the database's clock)
    assertThat(after).allSatisfy(k -> assertThat(k.due()).isTrue());
    assertThat(after.get(1).messages()).isEqualTo(1);
    assertThatThrownBy(() -> admin.as("grace").releaseParked("billing", "nope"))
        .isInstanceOf(NoSuchElementException.class);

    // a blocked outbox row: retried, then (after failing again) skipped
    exec(
        "INSERT INTO postbox_outbox (message_id, topic, msg_key, lane, type, schema_version,"
            + " occurred_at, source, content_type, payload, failed_at, hold, last_error) VALUES ('"
            + UUID.randomUUID()
            + "', 'orders', 'b1', 1, 't', 1, now(), '/x', 'application/json',"
            + " '\\x7b7d', now(), 'KEY', 'too large')");
    long position = admin.blockedOutboxRows().get(0).position();
    assertThat(admin.failedOutboxRows(PageRequest.first(5)).items()).hasSize(1);
    assertThat(admin.as("heidi").retryBlocked(position)).isTrue();
    assertThat(admin.as("heidi").retryBlocked(position)).as("nothing holds now").isFalse();
    exec("UPDATE postbox_outbox SET failed_at = now(), hold = 'KEY' WHERE position = " + position);
    assertThat(admin.as("ivan").skipBlocked(position, "obsolete")).isTrue();

    // the counted groups moved with every replay, edit, discard and skip
    for (DeadLetterGroup counted :
        admin.groups(DeadLetterFilter.all(), PageRequest.first(100)).items()) {
      DeadLetterFilter of = DeadLetterFilter.builder().fingerprint(counted.fingerprint()).build();
      assertThat(counted.count())
          .isEqualTo(admin.deadLetters(of, PageRequest.first(100)).items().size());
      assertThat(counted.pending())
          .isEqualTo(
              admin
                  .deadLetters(
                      of.toBuilder().status(Status.PENDING).build(), PageRequest.first(100))
                  .items()
                  .size());
    }
    assertThat(
            admin
                .groups(
                    DeadLetterFilter.builder().status(Status.PENDING).build(),
                    PageRequest.first(10))
                .items())
        .as("every letter was acted on")
        .isEmpty();

    Page<AuditEntry> audit = admin.audit(AuditFilter.all(), PageRequest.first(100));
    assertThat(audit.items())
        .extracting(a -> a.actor() + ":" + a.action())
        .containsExactly(
            "ivan:SKIP_BLOCKED",
            "heidi:RETRY_BLOCKED",
            "grace:SKIP_PARKED",
            "frank:RELEASE_PARKED",
            "erin:DISCARD",
            "dave:DISCARD",
            "carol:EDIT",
            "bob:REPLAY",
            "alice:REPLAY");
    AuditEntry edit = audit.items().get(6);
    assertThat(edit.deadLetterId()).contains(three);
    assertThat(edit.newMessageId()).contains(copy);
    assertThat(edit.reason()).contains("fix n");
    assertThat(audit.items().get(1).outboxPosition()).contains(position);
    assertThat(audit.items().get(3).key()).contains("p1");
    assertThat(admin.audit(AuditFilter.all().actor("carol"), PageRequest.first(10)).items())
        .hasSize(1);
    assertThat(admin.deadLetter(three).orElseThrow().audit()).hasSize(1);
    assertThat(admin.lag().consumers())
        .extracting(LagReport.Backlog::consumer)
        .containsExactly("billing");
    assertThat(admin.relays().lanes()).hasSize(64);
    assertThat(admin.outboxStatus().outboxPending()).as("two replays and a copy").isEqualTo(3);
  }

  @Test
  void aBroadcastReplayIsTheNamedOptionAndIsAuditedAsBroadcast() {
    long targeted = add("billing", "k1", "com.x.Bad", null, 0);
    long broadcast = add("billing", "k2", "com.x.Bad", null, 1);

    assertThat(admin.as("alice").replay(targeted).replayed()).containsExactly(targeted);
    assertThat(admin.as("bob").replay(broadcast, ReplayRoute.BROADCAST).replayed())
        .containsExactly(broadcast);

    Page<AuditEntry> audit = admin.audit(AuditFilter.all(), PageRequest.first(10));
    assertThat(audit.items())
        .extracting(a -> a.actor() + ":" + a.action() + ":" + a.reason().orElse("-"))
        .satisfiesExactly(
            b -> assertThat(b).startsWith("bob:REPLAY:broadcast: every consumer of topic 'orders'"),
            a -> assertThat(a).isEqualTo("alice:REPLAY:-"));
  }

  private void exec(String sql) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private List<String> query(String sql) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }
}
