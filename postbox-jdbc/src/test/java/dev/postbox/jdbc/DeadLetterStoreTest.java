package dev.postbox.jdbc;

import static dev.postbox.jdbc.DeadLetterTestData.lastFailedAt;
import static dev.postbox.jdbc.DeadLetterTestData.letter;
import static dev.postbox.jdbc.DeadLetterTestData.utf8;
import static dev.postbox.jdbc.DeadLetterTestData.withHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Query;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@PostboxTest
class DeadLetterStoreTest {

  private static final Instant T0 = Instant.parse("2024-05-01T10:00:00Z");

  private DataSource ds;
  private DeadLetterStore store;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresDeadLetterStore.create(ds);
  }

  @Test
  void aLetterComesBackByteIdentical() {
    byte[] key = {(byte) 0xff, 0x00, 'k', (byte) 0xc3};
    byte[] value = {0x00, 0x01, (byte) 0x80, (byte) 0xfe, '{', '}'};
    List<Header> headers =
        List.of(
            new Header("ce_id", utf8("3f2b8c1e-1111-4a2b-9c3d-0123456789ab")),
            new Header("x-dup", utf8("first")),
            new Header("x-null", null),
            new Header("x-dup", new byte[] {(byte) 0xff, 0x00}),
            new Header("x-empty", new byte[0]),
            new Header("x-dup", utf8("third")));
    NewDeadLetter base = letter("billing", "orders", "k", "fp1", T0);
    NewDeadLetter in =
        new NewDeadLetter(
            base.consumer(),
            base.topic(),
            7,
            9_876_543_210L,
            base.messageId(),
            base.type(),
            key,
            value,
            headers,
            Classification.RETRIES_EXHAUSTED,
            base.errorClass(),
            base.errorMessage(),
            base.stackTrace(),
            base.fingerprint(),
            5,
            T0,
            T0.plusMillis(1500));

    long id = store.add(in);
    DeadLetter out = store.find(id).orElseThrow();

    assertThat(out.id()).isEqualTo(id);
    assertThat(out.status()).isEqualTo(Status.PENDING);
    assertThat(out.replays()).isZero();
    assertThat(out.createdAt()).isNotNull();
    NewDeadLetter l = out.letter();
    assertThat(l.key()).isEqualTo(key);
    assertThat(l.value()).isEqualTo(value);
    assertThat(l.headers())
        .as("order, duplicates and nulls kept")
        .containsExactlyElementsOf(headers);
    assertThat(l.headers().get(2).value()).isNull();
    assertThat(l.headers().get(4).value()).isEmpty();
    assertThat(l.consumer()).isEqualTo("billing");
    assertThat(l.topic()).isEqualTo("orders");
    assertThat(l.partition()).isEqualTo(7);
    assertThat(l.offset()).isEqualTo(9_876_543_210L);
    assertThat(l.messageId()).isEqualTo(in.messageId());
    assertThat(l.type()).contains("order.created");
    assertThat(l.classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
    assertThat(l.errorClass()).isEqualTo(in.errorClass());
    assertThat(l.errorMessage()).isEqualTo(in.errorMessage());
    assertThat(l.stackTrace()).isEqualTo(in.stackTrace());
    assertThat(l.fingerprint()).isEqualTo("fp1");
    assertThat(l.attempts()).isEqualTo(5);
    assertThat(l.firstFailure()).isEqualTo(T0);
    assertThat(l.lastFailure()).isEqualTo(T0.plusMillis(1500));

    assertThat(store.find(id + 1000)).isEmpty();
  }

  @Test
  void aTombstoneWithoutKeyIdOrTypeAndWithoutHeadersComesBackAsIs() {
    NewDeadLetter in =
        new NewDeadLetter(
            "billing",
            "orders",
            0,
            0,
            Optional.empty(),
            Optional.empty(),
            null,
            null,
            List.of(),
            Classification.PERMANENT,
            "dev.postbox.core.DecodingException",
            null,
            null,
            "fp0",
            1,
            T0,
            T0);
    NewDeadLetter l = store.find(store.add(in)).orElseThrow().letter();
    assertThat(l.key()).isNull();
    assertThat(l.value()).isNull();
    assertThat(l.headers()).isEmpty();
    assertThat(l.messageId()).isEmpty();
    assertThat(l.type()).isEmpty();
    assertThat(l.errorMessage()).isNull();
    assertThat(l.stackTrace()).isNull();
  }

  @Test
  void queriesFilterByEachFieldOldestFirst() {
    long a = store.add(letter("billing", "orders", "k1", "fpA", T0.plusSeconds(30)));
    long b = store.add(letter("billing", "orders", "k2", "fpB", T0.plusSeconds(10)));
    long c = store.add(letter("billing", "payments", "k1", "fpA", T0.plusSeconds(20)));
    long d = store.add(letter("shipping", "orders", "k1", "fpA", T0.plusSeconds(40)));
    store.discard(d, "ops", "cancelled");

    assertThat(ids(Query.all(100))).as("oldest first").containsExactly(b, c, a, d);
    assertThat(ids(Query.all(2))).as("limit").containsExactly(b, c);
    assertThat(ids(q(Optional.of("billing"), null, null, null, null, null, null)))
        .containsExactly(b, c, a);
    assertThat(ids(q(null, Optional.of("orders"), null, null, null, null, null)))
        .containsExactly(b, a, d);
    assertThat(ids(q(null, null, Optional.of("k1"), null, null, null, null)))
        .containsExactly(c, a, d);
    assertThat(ids(q(null, null, null, Optional.of("fpB"), null, null, null))).containsExactly(b);
    assertThat(ids(q(null, null, null, null, Optional.of(Status.DISCARDED), null, null)))
        .containsExactly(d);
    assertThat(ids(q(null, null, null, null, Optional.of(Status.PENDING), null, null)))
        .containsExactly(b, c, a);
    assertThat(ids(q(null, null, null, null, null, Optional.of(T0.plusSeconds(20)), null)))
        .as("from is inclusive")
        .containsExactly(c, a, d);
    assertThat(ids(q(null, null, null, null, null, null, Optional.of(T0.plusSeconds(30)))))
        .as("to is exclusive")
        .containsExactly(b, c);
    assertThat(
            ids(
                q(
                    Optional.of("billing"),
                    Optional.of("orders"),
                    Optional.of("k1"),
                    Optional.of("fpA"),
                    Optional.of(Status.PENDING),
                    Optional.of(T0),
                    Optional.of(T0.plusSeconds(60)))))
        .as("all filters together")
        .containsExactly(a);
    assertThat(ids(q(Optional.of("nobody"), null, null, null, null, null, null))).isEmpty();
    assertThat(ids(q(null, null, Optional.of("k1' OR '1'='1"), null, null, null, null)))
        .as("values are parameters")
        .isEmpty();
  }

  @Test
  void theQueryLimitMustBeBetweenOneAndTenThousand() {
    store.add(letter("billing", "orders", "k1", "fpA", T0));
    assertThatThrownBy(() -> store.query(Query.all(0)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("limit");
    assertThatThrownBy(() -> store.query(Query.all(10_001)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(store.query(Query.all(10_000))).hasSize(1);
  }

  @Test
  void markReplayedAndDiscardMovePendingLettersOnly() throws Exception {
    long a = store.add(letter("billing", "orders", "k1", "fpA", T0));
    long b = store.add(letter("billing", "orders", "k2", "fpA", T0));

    store.markReplayed(a, "alice");
    DeadLetter replayed = store.find(a).orElseThrow();
    assertThat(replayed.status()).isEqualTo(Status.REPLAYED);
    assertThat(replayed.replays()).isEqualTo(1);
    assertThatThrownBy(() -> store.markReplayed(a, "alice"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("REPLAYED");
    assertThatThrownBy(() -> store.discard(a, "alice", "too late"))
        .isInstanceOf(IllegalStateException.class);
    assertThat(store.find(a).orElseThrow().replays()).isEqualTo(1);

    store.discard(b, "bob", "customer refunded by hand");
    assertThat(store.find(b).orElseThrow().status()).isEqualTo(Status.DISCARDED);
    assertThatThrownBy(() -> store.markReplayed(b, "alice"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("DISCARDED");
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT replayed_by, replayed_at IS NOT NULL, discarded_by, discard_reason,"
                    + " discarded_at IS NOT NULL FROM postbox_dead_letter WHERE id = ?")) {
      ps.setLong(1, a);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("alice");
        assertThat(rs.getBoolean(2)).isTrue();
      }
      ps.setLong(1, b);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getString(3)).isEqualTo("bob");
        assertThat(rs.getString(4)).isEqualTo("customer refunded by hand");
        assertThat(rs.getBoolean(5)).isTrue();
      }
    }

    assertThatThrownBy(() -> store.markReplayed(9999, "alice"))
        .isInstanceOf(NoSuchElementException.class);
    assertThatThrownBy(() -> store.discard(9999, "alice", "x"))
        .isInstanceOf(NoSuchElementException.class);
  }

  @Test
  void aNewLetterOfAReplayedMessageCarriesTheReplayCountOver() {
    NewDeadLetter first = letter("billing", "orders", "k1", "fpA", T0);
    long a = store.add(first);
    store.markReplayed(a, "alice");
    long again = store.add(lastFailedAt(first, T0.plusSeconds(60)));
    assertThat(store.find(again).orElseThrow().replays()).isEqualTo(1);
    assertThat(store.find(again).orElseThrow().status()).isEqualTo(Status.PENDING);

    NewDeadLetter otherConsumer =
        new NewDeadLetter(
            "shipping",
            first.topic(),
            first.partition(),
            first.offset(),
            first.messageId(),
            first.type(),
            first.key(),
            first.value(),
            first.headers(),
            first.classification(),
            first.errorClass(),
            first.errorMessage(),
            first.stackTrace(),
            first.fingerprint(),
            first.attempts(),
            first.firstFailure(),
            first.lastFailure());
    assertThat(store.find(store.add(otherConsumer)).orElseThrow().replays())
        .as("counted per consumer")
        .isZero();
    NewDeadLetter sameMessageOtherHeaders = withHeaders(first, List.of());
    assertThat(store.find(store.add(sameMessageOtherHeaders)).orElseThrow().replays()).isEqualTo(1);
  }

  @Test
  void purgeDeletesLettersOlderThanTheAgeByLastFailureInChunks() {
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    for (int i = 0; i < 3; i++) {
      store.add(
          lastFailedAt(
              letter("billing", "orders", "old" + i, "fpA", now.minus(Duration.ofDays(20))),
              now.minus(Duration.ofDays(10))));
    }
    long recent =
        store.add(
            lastFailedAt(
                letter("billing", "orders", "new", "fpA", now.minus(Duration.ofDays(20))),
                now.minus(Duration.ofHours(1))));

    assertThat(store.purge(Duration.ofDays(5), 2)).isEqualTo(2);
    assertThat(store.purge(Duration.ofDays(5), 2)).isEqualTo(1);
    assertThat(store.purge(Duration.ofDays(5), 2)).isZero();
    assertThat(ids(Query.all(100))).containsExactly(recent);
    assertThatThrownBy(() -> store.purge(Duration.ofDays(-1), 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.purge(Duration.ofDays(1), 0))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void creatingTheStoreBeforeMigratingFailsClearly(PostboxTestContext ctx) throws Exception {
    DataSource fresh = ctx.dataSource();
    try (Connection c = fresh.getConnection();
        var s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS postbox_replay_audit");
    }
    assertThatThrownBy(() -> PostgresDeadLetterStore.create(fresh))
        .isInstanceOf(DeadLetterException.class)
        .hasMessageContaining("PostboxMigrations.migrate");
  }

  private List<Long> ids(Query q) {
    return store.query(q).stream().map(DeadLetter::id).toList();
  }

  private static Query q(
      Optional<String> consumer,
      Optional<String> topic,
      Optional<String> key,
      Optional<String> fingerprint,
      Optional<Status> status,
      Optional<Instant> from,
      Optional<Instant> to) {
    return new Query(
        or(consumer), or(topic), or(key), or(fingerprint), or(status), or(from), or(to), 100);
  }

  private static <T> Optional<T> or(Optional<T> o) {
    return o == null ? Optional.empty() : o;
  }
}
