package dev.postbox.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The relay's mark must cost in proportion to its batch whatever plan PostgreSQL picks for it.
 *
 * <p>The mark used to join the outbox with the lease table and the relay's leases, so the planner
 * estimated "outbox rows in this relay's lanes" from the lease table's statistics. Those lag behind
 * ownership: after a relay restarts (a new owner token) and takes lanes, the last ANALYZE knows
 * only the old owners, and the planner estimated 9 rows where there were 15,000. A nested loop that
 * rescans the batch's 2,000 acknowledgements for each of those rows then looked cheap: 30 million
 * comparisons. In the demo a 2,000-row mark ran CPU-bound on the server for 7.5 s that way. This
 * test builds those statistics, restricts the planner to nested loops (the join method it picked)
 * and counts the rows the plan looked at and threw away: counts, not time.
 */
@PostboxTest
class MarkPublishedPlanTest {

  @Test
  void aMarkLooksAtRowsInProportionToItsBatchWhenTheLeaseStatisticsAreStale(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    int batch = 2_000;
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute(
          "INSERT INTO postbox_outbox (message_id, topic, msg_key, lane, type, schema_version,"
              + " occurred_at, source, content_type, payload)"
              + " SELECT gen_random_uuid(), 't', 'k' || (i % 500), i % 64, 'x', 1, now(), '/s',"
              + " 'application/json', '\\x00'::bytea FROM generate_series(1, 30000) i");
      // the statistics know the owners from before the restart only
      st.execute(
          "UPDATE postbox_relay_lane SET owner = 'relay-a#before', epoch = 1,"
              + " lease_until = now() + interval '1 hour'");
      st.execute("ANALYZE postbox_outbox");
      st.execute("ANALYZE postbox_relay_lane");
      st.execute(
          "UPDATE postbox_relay_lane SET owner = 'relay-a#after', epoch = 2 WHERE lane < 32");
    }
    Short[] lanes = new Short[32];
    Long[] epochs = new Long[32];
    for (short l = 0; l < 32; l++) {
      lanes[l] = l;
      epochs[l] = 2L;
    }
    List<Long> positions = new ArrayList<>();
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT position FROM postbox_outbox WHERE lane < 32 ORDER BY position LIMIT "
                    + batch)) {
      while (rs.next()) {
        positions.add(rs.getLong(1));
      }
    }
    Integer[] partitions = new Integer[batch];
    Long[] offsets = new Long[batch];
    for (int i = 0; i < batch; i++) {
      partitions[i] = 0;
      offsets[i] = (long) i;
    }

    // custom plans (the statement's values known to the planner) and generic ones (a cached plan
    // for any values, as after repeated executions on one connection)
    for (String mode : List.of("force_custom_plan", "force_generic_plan")) {
      long removed = 0;
      StringBuilder plan = new StringBuilder();
      try (Connection c = ctx.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try {
          try (Statement st = c.createStatement()) {
            st.execute("SET LOCAL enable_hashjoin = off");
            st.execute("SET LOCAL enable_mergejoin = off");
            st.execute("SET LOCAL plan_cache_mode = " + mode);
          }
          try (PreparedStatement ps =
              c.prepareStatement(
                  "EXPLAIN (ANALYZE, TIMING OFF) " + PostgresOutboxRows.MARK_PUBLISHED)) {
            ps.setArray(1, c.createArrayOf("int2", lanes));
            ps.setArray(2, c.createArrayOf("int8", epochs));
            ps.setString(3, "relay-a#after");
            ps.setArray(4, c.createArrayOf("int8", positions.toArray()));
            ps.setArray(5, c.createArrayOf("int4", partitions));
            ps.setArray(6, c.createArrayOf("int8", offsets));
            ExplainedPlan explained = ExplainedPlan.of(ps);
            plan.append(explained.text());
            removed += explained.removed();
          }
          try (Statement st = c.createStatement();
              ResultSet rs =
                  st.executeQuery(
                      "SELECT count(*) FROM postbox_outbox WHERE published_at IS NOT NULL")) {
            rs.next();
            assertThat(rs.getLong(1)).as("the batch was marked (%s)", mode).isEqualTo(batch);
          }
        } finally {
          c.rollback();
        }
      }
      assertThat(removed)
          .as("rows looked at and thrown away by the mark's plan (%s):\n%s", mode, plan)
          .isLessThan(10L * batch);
    }
  }
}
