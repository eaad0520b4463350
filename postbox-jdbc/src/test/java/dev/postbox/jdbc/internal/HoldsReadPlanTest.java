package dev.postbox.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every claim first reads the rows that hold their key or topic; that read must cost in proportion
 * to the holds, not to the outbox, whatever the statistics say.
 *
 * <p>The read used to be a bare {@code WHERE hold IS NOT NULL}. Before the outbox's first ANALYZE
 * (a new table, or a burst of inserts the statistics have not seen yet: exactly a relay draining a
 * backlog) the planner takes that condition to match most rows and scans the whole table: 20 ms per
 * claim on 100,000 pending rows, a quarter of the relay's throughput. This test leaves the outbox
 * unanalyzed and counts the rows the plan looked at and threw away: counts, not time.
 */
@PostboxTest
class HoldsReadPlanTest {

  @Test
  void theHoldsReadStaysOnItsIndexBeforeTheOutboxIsAnalyzed(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute("ALTER TABLE postbox_outbox SET (autovacuum_enabled = false)");
      insertPending(st, 30_000);
    }
    for (String mode : List.of("force_custom_plan", "force_generic_plan")) {
      StringBuilder plan = new StringBuilder();
      long removed = 0;
      try (Connection c = ctx.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try {
          try (Statement st = c.createStatement()) {
            st.execute("SET LOCAL plan_cache_mode = " + mode);
          }
          try (PreparedStatement ps =
              c.prepareStatement("EXPLAIN (ANALYZE, TIMING OFF) " + Holds.READ)) {
            ps.setLong(1, Long.MIN_VALUE);
            ExplainedPlan explained = ExplainedPlan.of(ps);
            plan.append(explained.text());
            removed += explained.removed();
          }
        } finally {
          c.rollback();
        }
      }
      assertThat(plan.toString()).as("plan (%s)", mode).contains("postbox_outbox_holding");
      assertThat(removed).as("rows looked at and thrown away (%s):%n%s", mode, plan).isZero();
    }
  }

  @Test
  void moreHoldsThanOnePageAreAllRead(PostboxTestContext ctx) throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    int held = 2 * Holds.PAGE + 7;
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement()) {
      insertPending(st, held + 100);
      st.execute(
          "UPDATE postbox_outbox SET failed_at = now(),"
              + " hold = CASE WHEN position % 10 = 0 THEN 'TOPIC' ELSE 'KEY' END"
              + " WHERE position IN (SELECT position FROM postbox_outbox ORDER BY position LIMIT "
              + held
              + ")");
    }
    try (Connection c = ctx.dataSource().getConnection()) {
      Holds holds = Holds.read(c);
      assertThat(holds.keys()).hasSize(held);
      assertThat(holds.keyPositions()).isSorted().doesNotHaveDuplicates().hasSize(held);
      assertThat(holds.topics()).isNotEmpty().containsOnly("t");
      assertThat(holds.none()).isFalse();
    }
  }

  @Test
  void noHoldsReadsAsNone(PostboxTestContext ctx) throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement()) {
      insertPending(st, 10);
      assertThat(Holds.read(c).none()).isTrue();
    }
  }

  private static void insertPending(Statement st, int rows) throws Exception {
    st.execute(
        "INSERT INTO postbox_outbox (message_id, topic, msg_key, lane, type, schema_version,"
            + " occurred_at, source, content_type, payload)"
            + " SELECT gen_random_uuid(), 't', 'k' || i, i % 64, 'x', 1, now(), '/s',"
            + " 'application/json', '\\x00'::bytea FROM generate_series(1, "
            + rows
            + ") i");
  }
}
