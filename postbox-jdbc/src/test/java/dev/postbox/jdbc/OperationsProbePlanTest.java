package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.jdbc.internal.ExplainedPlan;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * A reading of the probe (a health check, a metrics scrape) must not scan the outbox when nothing
 * holds. Its questions about holding rows were bare {@code hold IS NOT NULL} conditions, which
 * before the outbox's first ANALYZE the planner runs as scans of the whole table (it takes most
 * rows to match). This test leaves a 30,000-row outbox unanalyzed and counts the rows the plan
 * looked at and threw away: counts, not time; then holds one row and checks the counts. (With a
 * holding row and no statistics, the count of the rows held behind it still scans: only a probe of
 * an outbox that has both pays that.)
 */
@PostboxTest
class OperationsProbePlanTest {

  @Test
  void aReadingDoesNotScanTheOutboxWhenNothingHolds(PostboxTestContext ctx) throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    try (Connection c = ctx.dataSource().getConnection();
        Statement st = c.createStatement()) {
      st.execute("ALTER TABLE postbox_outbox SET (autovacuum_enabled = false)");
      st.execute(
          "INSERT INTO postbox_outbox (message_id, topic, msg_key, lane, type, schema_version,"
              + " occurred_at, source, content_type, payload)"
              + " SELECT gen_random_uuid(), 't', 'k' || (i % 100), i % 64, 'x', 1, now(), '/s',"
              + " 'application/json', '\\x00'::bytea FROM generate_series(1, 30000) i");
      ExplainedPlan plan;
      try (PreparedStatement explain =
          c.prepareStatement("EXPLAIN (ANALYZE, TIMING OFF) " + OperationsProbe.READ)) {
        plan = ExplainedPlan.of(explain);
      }
      assertThat(plan.removed()).as("rows looked at and thrown away:%n%s", plan.text()).isZero();

      OperationsProbe probe = OperationsProbe.postgres(ctx.dataSource());
      assertThat(probe.snapshot().outboxHolding()).isZero();
      assertThat(probe.snapshot().outboxHeld()).isZero();
      // one row of key k7 holds: the later pending rows of k7 wait behind it (analyzed first:
      // with a hold and no statistics the count of held rows is planned as a nested loop over
      // the whole outbox, which this test is not about)
      st.execute("ANALYZE postbox_outbox");
      st.execute(
          "UPDATE postbox_outbox SET failed_at = now(), hold = 'KEY' WHERE position ="
              + " (SELECT min(position) FROM postbox_outbox WHERE msg_key = 'k7')");
      OperationsProbe.Snapshot held = OperationsProbe.postgres(ctx.dataSource()).snapshot();
      assertThat(held.outboxHolding()).isEqualTo(1);
      assertThat(held.outboxHeld()).isEqualTo(299);
    }
  }
}
