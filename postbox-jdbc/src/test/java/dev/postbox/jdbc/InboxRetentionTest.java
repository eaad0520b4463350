package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@PostboxTest
class InboxRetentionTest {

  private static final String CONSUMER = "billing";
  private static final Duration TOPIC_RETENTION = Duration.ofDays(7);

  private DataSource ds;
  private InboxStore store;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresInboxStore.create(ds);
  }

  @Test
  void refusesARetentionShorterThanTheMinimumSafeRetention() throws Exception {
    record(CONSUMER, Duration.ofDays(2));
    InboxRetention.Builder tooShort =
        InboxRetention.builder(store, CONSUMER)
            .retention(Duration.ofDays(1))
            .minimumSafeRetention(TOPIC_RETENTION);

    assertThatThrownBy(tooShort::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("consumer 'billing'")
        .hasMessageContaining("PT24H")
        .hasMessageContaining("PT168H")
        .hasMessageContaining("applied twice")
        .hasMessageContaining("force(true)");
    assertThat(count(CONSUMER)).as("nothing purged").isEqualTo(1);

    assertThat(
            InboxRetention.builder(store, CONSUMER)
                .retention(TOPIC_RETENTION)
                .minimumSafeRetention(TOPIC_RETENTION)
                .build()
                .retention())
        .as("equal to the minimum is safe")
        .isEqualTo(TOPIC_RETENTION);
  }

  @Test
  void forceAcceptsAShortRetentionAndPurges() throws Exception {
    record(CONSUMER, Duration.ofDays(2));
    UUID recent = record(CONSUMER, Duration.ofHours(1));

    InboxRetention forced =
        InboxRetention.builder(store, CONSUMER)
            .retention(Duration.ofDays(1))
            .minimumSafeRetention(TOPIC_RETENTION)
            .force(true)
            .build();

    assertThat(forced.purgeNow()).isEqualTo(1);
    assertThat(count(CONSUMER)).isEqualTo(1);
    assertThat(store.processOnce(CONSUMER, recent, c -> {})).as("still a duplicate").isFalse();
  }

  @Test
  void purgeNowDeletesInChunksUntilNothingOldIsLeft() throws Exception {
    for (int i = 0; i < 5; i++) {
      record(CONSUMER, Duration.ofDays(10));
    }
    record(CONSUMER, Duration.ofDays(1));
    record("shipping", Duration.ofDays(10));

    InboxRetention retention =
        InboxRetention.builder(store, CONSUMER)
            .retention(Duration.ofDays(8))
            .minimumSafeRetention(TOPIC_RETENTION)
            .chunkSize(2)
            .build();

    assertThat(retention.purgeNow()).isEqualTo(5);
    assertThat(count(CONSUMER)).isEqualTo(1);
    assertThat(count("shipping")).as("other consumers untouched").isEqualTo(1);
    assertThat(retention.purgeNow()).isZero();
  }

  @Test
  void purgeNowStopsAfterAChunkThatWasNotFull() {
    CountingStore counting = new CountingStore(new int[] {3, 3, 1, 3});
    long purged =
        InboxRetention.builder(counting, CONSUMER)
            .retention(Duration.ofDays(1))
            .chunkSize(3)
            .build()
            .purgeNow();
    assertThat(purged).isEqualTo(7);
    assertThat(counting.calls).isEqualTo(3);
  }

  @Test
  void invalidConfigurationsAreRefusedAtBuild() {
    assertThatThrownBy(() -> InboxRetention.builder(store, CONSUMER).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no retention");
    assertThatThrownBy(
            () -> InboxRetention.builder(store, " ").retention(Duration.ofDays(1)).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () -> InboxRetention.builder(store, CONSUMER).retention(Duration.ofDays(-1)).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() ->
            InboxRetention.builder(store, CONSUMER)
                .retention(Duration.ofDays(1))
                .minimumSafeRetention(Duration.ofDays(-1))
                .build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() ->
            InboxRetention.builder(store, CONSUMER)
                .retention(Duration.ofDays(1))
                .chunkSize(0)
                .build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> InboxRetention.builder(store, CONSUMER).retention(null))
        .isInstanceOf(NullPointerException.class);
  }

  private UUID record(String consumer, Duration age) throws Exception {
    UUID id = UUID.randomUUID();
    assertThat(store.processOnce(consumer, id, c -> {})).isTrue();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE postbox_inbox SET processed_at = now() - make_interval(secs => ?)"
                    + " WHERE consumer = ? AND message_id = ?")) {
      ps.setDouble(1, age.toSeconds());
      ps.setString(2, consumer);
      ps.setObject(3, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
    return id;
  }

  private long count(String consumer) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM postbox_inbox WHERE consumer = ?")) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** A store whose purge returns the given counts in turn. */
  private static final class CountingStore implements InboxStore {
    private final int[] counts;
    int calls;

    CountingStore(int[] counts) {
      this.counts = counts;
    }

    @Override
    public int purge(String consumer, Duration age, int limit) {
      return counts[calls++];
    }

    @Override
    public boolean processOnce(String consumer, UUID messageId, Work work) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean advanceVersion(Connection connection, String entity, long version) {
      throw new UnsupportedOperationException();
    }
  }
}
