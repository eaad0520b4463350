package dev.postbox.jdbc;

import static dev.postbox.jdbc.DeadLetterTestData.lastFailedAt;
import static dev.postbox.jdbc.DeadLetterTestData.letter;
import static dev.postbox.jdbc.DeadLetterTestData.utf8;
import static dev.postbox.jdbc.DeadLetterTestData.withHeaders;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.ReplayHeaders;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Query;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.core.time.Sleeper;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@PostboxTest
class ReplayerTest {

  private static final Instant T0 = Instant.parse("2024-05-01T10:00:00Z");

  /** Rebuilds the message from the stored letter; refuses letters with a "poison" header. */
  private static final Function<DeadLetter, Message> DECODER =
      d -> {
        NewDeadLetter l = d.letter();
        if (l.headers().stream().anyMatch(h -> h.name().equals("poison"))) {
          throw new IllegalArgumentException("cannot decode letter " + d.id());
        }
        return Message.builder(l.topic(), l.type().orElseThrow())
            .id(l.messageId().orElseThrow())
            .key(l.key() == null ? null : new String(l.key(), StandardCharsets.UTF_8))
            .payload(new Payload(l.value(), Payload.JSON))
            .build();
      };

  private DataSource ds;
  private DeadLetterStore store;
  private FakeTime time;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresDeadLetterStore.create(ds);
    time = new FakeTime(T0);
  }

  private Replayer.Builder replayer() {
    return Replayer.builder(ds, store, DECODER).by("alice").clock(time).sleeper(time);
  }

  @Test
  void replaysLettersIntoTheOutboxOnceWithAnAuditRowEach() throws Exception {
    List<Long> ids = new ArrayList<>();
    List<UUID> messageIds = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      NewDeadLetter l = letter("billing", "orders", "k" + i, "fpA", T0.plusSeconds(i));
      ids.add(store.add(l));
      messageIds.add(l.messageId().orElseThrow());
    }
    Replayer replayer = replayer().build();

    ReplayResult result = replayer.replayQuery(Query.all(100));

    assertThat(result.replayed()).containsExactlyElementsOf(ids);
    assertThat(result.skipped()).isEmpty();
    assertThat(result.failed()).isEmpty();
    assertThat(outboxMessageIds()).containsExactlyElementsOf(messageIds);
    assertThat(outboxPayload(messageIds.get(2))).isEqualTo(utf8("{\"order\":\"k2\"}"));
    for (long id : ids) {
      DeadLetter d = store.find(id).orElseThrow();
      assertThat(d.status()).isEqualTo(Status.REPLAYED);
      assertThat(d.replays()).isEqualTo(1);
    }
    assertThat(audit())
        .hasSize(5)
        .allSatisfy(a ->
            assertThat(a).startsWith("alice|REPLAY|1|dead letter ").contains("of query limit=100"));

    ReplayResult again = replayer.replayQuery(Query.all(100));
    assertThat(again.replayed()).isEmpty();
    assertThat(again.skipped()).containsExactlyElementsOf(ids);
    assertThat(again.failed()).isEmpty();
    assertThat(replayer.replay(ids.get(0)).skipped()).containsExactly(ids.get(0));
    assertThat(outboxMessageIds()).as("nothing new written").hasSize(5);
    assertThat(audit()).as("nothing new audited").hasSize(5);
    assertThat(store.find(ids.get(0)).orElseThrow().replays()).isEqualTo(1);
  }

  @Test
  void aReplayIsAddressedToTheLettersConsumerAndSaysItIsAReplay() throws Exception {
    NewDeadLetter l = letter("billing", "orders", "k1", "fpA", T0);
    long id = store.add(l);
    UUID message = l.messageId().orElseThrow();

    assertThat(replayer().build().replay(id).replayed()).containsExactly(id);

    assertThat(outboxHeader(message, ReplayHeaders.DEAD_LETTER)).isEqualTo(Long.toString(id));
    assertThat(outboxHeader(message, ReplayHeaders.REPLAYED_BY)).isEqualTo("alice");
    assertThat(outboxHeader(message, ReplayHeaders.TARGET)).isEqualTo("billing");
    assertThat(audit()).containsExactly("alice|REPLAY|1|dead letter " + id);
  }

  @Test
  void aBroadcastReplayHasNoTargetWarnsAndIsAuditedAsBroadcast() throws Exception {
    NewDeadLetter l = letter("billing", "orders", "k1", "fpA", T0);
    long id = store.add(l);
    UUID message = l.messageId().orElseThrow();
    Replayer replayer = replayer().build();

    // slf4j-simple writes to the System.err of the moment; the warning is logged on this thread
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    java.io.PrintStream before = System.err;
    System.setErr(new java.io.PrintStream(err, true, StandardCharsets.UTF_8));
    ReplayResult result;
    try {
      result = replayer.replay(id, ReplayRoute.BROADCAST);
    } finally {
      System.setErr(before);
    }

    assertThat(result.replayed()).containsExactly(id);
    assertThat(outboxHeader(message, ReplayHeaders.DEAD_LETTER)).isEqualTo(Long.toString(id));
    assertThat(outboxHeader(message, ReplayHeaders.TARGET)).as("no target").isNull();
    assertThat(audit())
        .containsExactly(
            "alice|REPLAY|1|dead letter "
                + id
                + "|broadcast: every consumer of topic 'orders' receives message "
                + message
                + " again");
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("WARN")
        .contains("dead letter " + id + " by alice was a broadcast replay");
  }

  @Test
  void writesAreSpacedByTheRate() {
    for (int i = 0; i < 5; i++) {
      store.add(letter("billing", "orders", "k" + i, "fpA", T0.plusSeconds(i)));
    }
    Replayer replayer = replayer().ratePerSecond(4).build();

    assertThat(replayer.replayQuery(Query.all(100)).replayed()).hasSize(5);

    assertThat(time.sleeps)
        .as("(N - 1) waits of 1/rate")
        .containsExactly(
            Duration.ofMillis(250),
            Duration.ofMillis(250),
            Duration.ofMillis(250),
            Duration.ofMillis(250));
    assertThat(time.slept()).isEqualTo(Duration.ofSeconds(1));

    // time has moved on since the last write: the next one needs no wait
    time.advance(Duration.ofSeconds(10));
    store.add(letter("billing", "orders", "late", "fpA", T0.plusSeconds(9)));
    assertThat(replayer.replayQuery(Query.all(100)).replayed()).hasSize(1);
    assertThat(time.sleeps).hasSize(4);
  }

  @Test
  void skippedAndUndecodableLettersTakeNoTurn() {
    store.add(letter("billing", "orders", "a", "fpA", T0));
    store.add(
        withHeaders(
            letter("billing", "orders", "b", "fpA", T0.plusSeconds(1)),
            List.of(new Header("poison", null))));
    store.add(letter("billing", "orders", "c", "fpA", T0.plusSeconds(2)));
    Replayer replayer = replayer().ratePerSecond(2).build();

    ReplayResult r = replayer.replayQuery(Query.all(100));

    assertThat(r.replayed()).hasSize(2);
    assertThat(r.failed()).hasSize(1);
    assertThat(time.slept()).isEqualTo(Duration.ofMillis(500));
  }

  @Test
  void aLetterWhoseDecoderThrowsIsCountedFailedAndStaysPending() throws Exception {
    long poison =
        store.add(
            withHeaders(
                letter("billing", "orders", "k", "fpA", T0), List.of(new Header("poison", null))));
    long wrongId = store.add(letter("billing", "orders", "k2", "fpA", T0.plusSeconds(1)));
    Replayer replayer =
        Replayer.builder(
                ds,
                store,
                d ->
                    d.id() == wrongId
                        ? Message.builder("orders", "order.created").jsonPayload("{}").build()
                        : DECODER.apply(d))
            .by("alice")
            .clock(time)
            .sleeper(time)
            .build();

    ReplayResult r = replayer.replayQuery(Query.all(100));

    assertThat(r.failed()).containsExactly(poison, wrongId);
    assertThat(r.replayed()).isEmpty();
    assertThat(store.find(poison).orElseThrow().status()).isEqualTo(Status.PENDING);
    assertThat(store.find(wrongId).orElseThrow().status()).isEqualTo(Status.PENDING);
    assertThat(outboxMessageIds()).isEmpty();
    assertThat(audit()).isEmpty();
  }

  @Test
  void aMessageIsReplayedAtMostMaxReplaysTimes() throws Exception {
    NewDeadLetter first = letter("billing", "orders", "k", "fpA", T0);
    UUID messageId = first.messageId().orElseThrow();
    Replayer replayer = replayer().maxReplays(2).build();

    long a = store.add(first);
    assertThat(replayer.replay(a).replayed()).containsExactly(a);

    // the replayed message failed again: a new letter of the same message
    long b = store.add(lastFailedAt(first, T0.plusSeconds(60)));
    assertThat(store.find(b).orElseThrow().replays()).isEqualTo(1);
    ReplayResult stillQueued = replayer.replay(b);
    assertThat(stillQueued.failed())
        .as("the first replay is still pending in the outbox")
        .containsExactly(b);
    assertThat(store.find(b).orElseThrow().status()).isEqualTo(Status.PENDING);

    markPublished(messageId);
    assertThat(replayer.replay(b).replayed()).containsExactly(b);
    assertThat(outboxMessageIds()).as("the published row made room").containsExactly(messageId);
    assertThat(store.find(b).orElseThrow().replays()).isEqualTo(2);

    // and failed a third time: no more replays
    markPublished(messageId);
    long c = store.add(lastFailedAt(first, T0.plusSeconds(120)));
    ReplayResult r = replayer.replay(c);
    assertThat(r.skipped()).containsExactly(c);
    assertThat(r.replayed()).isEmpty();
    assertThat(store.find(c).orElseThrow().status()).isEqualTo(Status.PENDING);
    assertThat(outboxMessageIds()).containsExactly(messageId);
    assertThat(audit()).hasSize(2);
  }

  @Test
  void replayKeyReplaysOneKeyOldestFirstAndStopsAtAFailure() throws Exception {
    long k3 = store.add(letter("billing", "orders", "k", "fpA", T0.plusSeconds(3)));
    long k1 = store.add(letter("billing", "orders", "k", "fpA", T0.plusSeconds(1)));
    store.add(letter("billing", "orders", "other", "fpA", T0));
    store.add(letter("shipping", "orders", "k", "fpA", T0));
    long k2 = store.add(letter("billing", "orders", "k", "fpA", T0.plusSeconds(2)));
    Replayer replayer = replayer().build();

    ReplayResult r = replayer.replayKey("billing", "k");

    assertThat(r.replayed()).containsExactly(k1, k2, k3);
    assertThat(outboxMessageIds())
        .as("written in failure order")
        .containsExactly(messageId(k1), messageId(k2), messageId(k3));
    assertThat(replayer.replayKey("billing", "k").replayed()).isEmpty();

    long p1 = store.add(letter("billing", "orders", "p", "fpA", T0.plusSeconds(1)));
    long p2 =
        store.add(
            withHeaders(
                letter("billing", "orders", "p", "fpA", T0.plusSeconds(2)),
                List.of(new Header("poison", null))));
    long p3 = store.add(letter("billing", "orders", "p", "fpA", T0.plusSeconds(3)));
    ReplayResult stopped = replayer.replayKey("billing", "p");
    assertThat(stopped.replayed()).containsExactly(p1);
    assertThat(stopped.failed()).containsExactly(p2);
    assertThat(stopped.skipped()).as("kept back to keep the key's order").containsExactly(p3);
    assertThat(store.find(p3).orElseThrow().status()).isEqualTo(Status.PENDING);
  }

  @Test
  void discardIsAuditedAndEndsTheLetter() throws Exception {
    long id = store.add(letter("billing", "orders", "k", "fpA", T0));
    Replayer replayer = replayer().by("bob").build();

    replayer.discard(id, "refunded by hand");

    assertThat(store.find(id).orElseThrow().status()).isEqualTo(Status.DISCARDED);
    assertThat(audit()).containsExactly("bob|DISCARD|1|dead letter " + id + "|refunded by hand");
    assertThat(replayer.replay(id).skipped()).containsExactly(id);
    assertThat(outboxMessageIds()).isEmpty();
    assertThatThrownBy(() -> replayer.discard(id, "again"))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> replayer.discard(id + 100, "unknown"))
        .isInstanceOf(NoSuchElementException.class);
    assertThatThrownBy(() -> replayer.replay(id + 100)).isInstanceOf(NoSuchElementException.class);
    assertThat(audit()).hasSize(1);
  }

  @Test
  void theBuilderRefusesInvalidSettings() {
    assertThatThrownBy(() -> Replayer.builder(ds, store, DECODER).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("by(who)");
    assertThatThrownBy(() -> replayer().by(" ").build())
        .isInstanceOf(IllegalArgumentException.class);
    for (double rate : new double[] {0, -1, Double.NaN, Double.POSITIVE_INFINITY}) {
      assertThatThrownBy(() -> replayer().ratePerSecond(rate).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("ratePerSecond");
    }
    assertThatThrownBy(() -> replayer().maxReplays(0).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Replayer.builder(ds, store, null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void anInterruptedWaitStopsWithThePartialResult() {
    store.add(letter("billing", "orders", "a", "fpA", T0));
    store.add(letter("billing", "orders", "b", "fpA", T0.plusSeconds(1)));
    Replayer replayer =
        replayer()
            .sleeper(d -> {
              throw new InterruptedException("stop");
            })
            .build();
    try {
      assertThatThrownBy(() -> replayer.replayQuery(Query.all(100)))
          .isInstanceOfSatisfying(
              ReplayInterruptedException.class,
              e -> assertThat(e.partialResult().replayed()).hasSize(1));
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }

  private UUID messageId(long id) {
    return store.find(id).orElseThrow().letter().messageId().orElseThrow();
  }

  private List<UUID> outboxMessageIds() throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT message_id FROM postbox_outbox ORDER BY position");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  private String outboxHeader(UUID id, String name) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT headers ->> ? FROM postbox_outbox WHERE message_id = ?")) {
      ps.setString(1, name);
      ps.setObject(2, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("an outbox row").isTrue();
        return rs.getString(1);
      }
    }
  }

  private byte[] outboxPayload(UUID id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT payload FROM postbox_outbox WHERE message_id = ?")) {
      ps.setObject(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBytes(1);
      }
    }
  }

  private void markPublished(UUID id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE postbox_outbox SET published_at = now() WHERE message_id = ?")) {
      ps.setObject(1, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  /** Audit rows as "by|action|how_many|what|reason", oldest first. */
  private List<String> audit() throws SQLException {
    List<String> rows = new ArrayList<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT by_whom, action, how_many, what, reason FROM postbox_replay_audit"
                    + " ORDER BY id");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        rows.add(
            rs.getString(1)
                + "|"
                + rs.getString(2)
                + "|"
                + rs.getInt(3)
                + "|"
                + rs.getString(4)
                + (rs.getString(5) == null ? "" : "|" + rs.getString(5)));
      }
    }
    return rows;
  }

  /** A clock that only moves when told to or when something sleeps on it. */
  private static final class FakeTime extends Clock implements Sleeper {
    private Instant now;
    final List<Duration> sleeps = new ArrayList<>();

    FakeTime(Instant start) {
      this.now = start;
    }

    @Override
    public synchronized void sleep(Duration duration) {
      sleeps.add(duration);
      now = now.plus(duration);
    }

    synchronized void advance(Duration d) {
      now = now.plus(d);
    }

    synchronized Duration slept() {
      return sleeps.stream().reduce(Duration.ZERO, Duration::plus);
    }

    @Override
    public synchronized Instant instant() {
      return now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException();
    }
  }
}
