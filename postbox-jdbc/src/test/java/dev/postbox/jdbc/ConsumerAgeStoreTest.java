package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The consumers' oldest unfinished messages on PostgreSQL ({@code postbox_consumer_age}): the
 * oldest across the live instances per queue, a report replacing the instance's previous one, a
 * stale report read as unknown, forgetting and pruning. Times are given, as the callers' clock.
 */
@PostboxTest
class ConsumerAgeStoreTest {

  private static final Instant T0 = Instant.parse("2026-03-01T10:00:00Z");
  private static final Duration STALE = Duration.ofSeconds(30);

  private DataSource ds;
  private ConsumerAgeStore store;

  @BeforeEach
  void setUp(PostboxTestContext ctx) {
    ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    store = PostgresConsumerAgeStore.create(ds);
  }

  @Test
  void eachQueueReadsTheOldestAcrossTheInstancesAndNothingUnfinishedAsEmpty() {
    Instant a = T0.minusSeconds(40);
    Instant b = T0.minusSeconds(7);
    store.report("s", "i1", Map.of("q0", Optional.of(b), "q1", Optional.empty()), T0);
    store.report("s", "i2", Map.of("q0", Optional.of(a), "q2", Optional.empty()), T0);
    store.report("other", "i3", Map.of("q0", Optional.of(T0.minusSeconds(999))), T0);

    assertThat(store.read("s", T0.plusSeconds(1), STALE))
        .as("q0: the older of the two; q1, q2: reported, nothing unfinished; q3: never reported")
        .containsExactly(
            Map.entry("q0", Optional.of(a)),
            Map.entry("q1", Optional.empty()),
            Map.entry("q2", Optional.empty()));
    assertThat(store.read("nobody", T0, STALE)).isEmpty();
  }

  @Test
  void aReportReplacesTheInstancesPreviousOneAndForgetRemovesIt() {
    store.report("s", "i1", Map.of("q0", Optional.of(T0), "q1", Optional.of(T0)), T0);
    Instant later = T0.plusSeconds(5);
    store.report("s", "i1", Map.of("q1", Optional.empty()), later);

    assertThat(store.read("s", later, STALE))
        .as("q0 handed over: no longer in i1's report; q1 finished")
        .isEqualTo(Map.of("q1", Optional.empty()));

    store.report("s", "i2", Map.of("q1", Optional.of(later)), later);
    store.forget("s", "i1");
    assertThat(store.read("s", later, STALE)).isEqualTo(Map.of("q1", Optional.of(later)));
    store.forget("s", "i2");
    assertThat(store.read("s", later, STALE)).isEmpty();
  }

  @Test
  void aReportOlderThanTheStalenessBoundIsUnknownNotIdle() {
    store.report("s", "dead", Map.of("q0", Optional.of(T0.minusSeconds(100))), T0);
    store.report("s", "live", Map.of("q1", Optional.empty()), T0.plusSeconds(25));
    Instant now = T0.plusSeconds(31);

    assertThat(store.read("s", now, STALE))
        .as("the dead instance's report is 31 s old: q0 unknown, not idle")
        .isEqualTo(Map.of("q1", Optional.empty()));
    assertThat(store.read("s", T0.plusSeconds(30), STALE))
        .as("exactly at the bound it still counts")
        .containsEntry("q0", Optional.of(T0.minusSeconds(100)));

    // once the dead instance's report is stale, the live instances' reports alone decide
    store.report("s", "live", Map.of("q0", Optional.empty()), now);
    assertThat(store.read("s", now, STALE)).isEqualTo(Map.of("q0", Optional.empty()));
  }

  @Test
  void aReportDeletesTheSubscriptionsReportsOlderThanTheRetention() throws SQLException {
    store.report("s", "gone", Map.of("q0", Optional.of(T0)), T0);
    store.report("other", "gone", Map.of("q0", Optional.of(T0)), T0);
    Instant much = T0.plus(ConsumerAgeStore.RETENTION).plusSeconds(1);
    store.report("s", "live", Map.of("q0", Optional.empty()), much);

    assertThat(rows("s")).as("gone's row of s deleted, live's kept").isEqualTo(1);
    assertThat(rows("other"))
        .as("another subscription's rows are its own reports' to prune")
        .isEqualTo(1);
    // an instance that consumes nothing now keeps no row
    store.report("s", "live", Map.of(), much);
    assertThat(rows("s")).isZero();
  }

  private int rows(String subscription) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT count(*) FROM postbox_consumer_age WHERE consumer = '"
                    + subscription
                    + "'")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
