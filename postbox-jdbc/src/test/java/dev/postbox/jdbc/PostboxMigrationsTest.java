package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

@PostboxTest
class PostboxMigrationsTest {

  @Test
  void allMigrationsApplyOnAFreshSchemaOnce(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    assertThat(PostboxMigrations.migrate(ds)).isEqualTo(PostboxMigrations.scripts().size());
    assertThat(PostboxMigrations.migrate(ds)).as("idempotent").isZero();
    assertThat(exists(ds, "postbox_outbox")).isTrue();
    assertThat(exists(ds, "postbox_inbox")).isTrue();
    assertThat(exists(ds, "postbox_inbox_processed_consumer")).as("purge index").isTrue();
    assertThat(exists(ds, "postbox_inbox_processed")).as("the purge index before V16").isFalse();
    assertThat(exists(ds, "postbox_entity_version")).isTrue();
    assertThat(exists(ds, "postbox_dead_letter")).isTrue();
    assertThat(exists(ds, "postbox_replay_audit")).isTrue();
    assertThat(exists(ds, "postbox_parked")).isTrue();
    assertThat(PostboxMigrations.scripts())
        .extracting(PostboxMigrations.Script::name)
        .containsExactly(
            "V1__outbox.sql",
            "V2__inbox.sql",
            "V3__dead_letters.sql",
            "V4__parking.sql",
            "V5__inbox_payload_fingerprint.sql",
            "V6__outbox_published_position.sql",
            "V7__notify_only_idle_relays.sql",
            "V8__static_notify_check.sql",
            "V9__outbox_unpublishable_holds.sql",
            "V10__inbox_stored_result.sql",
            "V11__consumer_offsets.sql",
            "V12__operations.sql",
            "V13__cdc_slot_lease.sql",
            "V15__console_reveal_audit.sql",
            "V16__inbox_keys_lead_with_id_and_time.sql",
            "V17__header_text_never_fails.sql",
            "V18__console_security_audit.sql",
            "V19__shard_leases.sql",
            "V20__replay_jobs.sql",
            "V21__consumer_ages.sql");
  }

  @Test
  void aStagedUpgradeStopsAtTheVersionAskedForAndRefusesOneThatNoMigrationHas(
      PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    assertThatThrownBy(() -> PostboxMigrations.migrateTo(ds, 14))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no Postbox migration has version 14");
    assertThatThrownBy(() -> PostboxMigrations.migrateTo(ds, PostboxMigrations.latestVersion() + 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(exists(ds, "postbox_outbox")).isFalse();

    assertThat(PostboxMigrations.migrateTo(ds, 3)).isEqualTo(3);
    assertThat(exists(ds, "postbox_dead_letter")).isTrue();
    assertThat(exists(ds, "postbox_parked")).isFalse();
    assertThat(PostboxMigrations.migrateTo(ds, 2)).isZero();
    assertThat(PostboxMigrations.migrate(ds)).isEqualTo(PostboxMigrations.scripts().size() - 3);
    assertThat(PostboxMigrations.latestVersion()).isEqualTo(21);
  }

  @Test
  void anInstallationAtVersionOneUpgradesToTheInbox(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    assertThat(PostboxMigrations.migrateTo(ds, 1)).isEqualTo(1);
    assertThat(exists(ds, "postbox_outbox")).isTrue();
    assertThat(exists(ds, "postbox_inbox")).isFalse();
    assertThatThrownBy(() -> PostgresInboxStore.create(ds))
        .isInstanceOf(InboxException.class)
        .hasMessageContaining("PostboxMigrations.migrate");

    assertThat(PostboxMigrations.migrate(ds))
        .as("every version after 1")
        .isEqualTo(PostboxMigrations.scripts().size() - 1);
    assertThat(exists(ds, "postbox_dead_letter")).isTrue();
    assertThat(PostgresInboxStore.create(ds).processOnce("c", UUID.randomUUID(), c -> {})).isTrue();
  }

  @Test
  void theScriptsCanBeAppliedByHand(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      for (PostboxMigrations.Script script : PostboxMigrations.scripts()) {
        s.execute(script.sql());
      }
    }
    assertThat(PostgresInboxStore.create(ds).processOnce("c", UUID.randomUUID(), c -> {})).isTrue();
  }

  private static boolean exists(DataSource ds, String relation) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT to_regclass('" + relation + "') IS NOT NULL")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }
}
