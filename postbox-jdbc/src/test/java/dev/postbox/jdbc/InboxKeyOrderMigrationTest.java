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
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * V16: the inbox's primary key leads with {@code message_id} and its retention index with {@code
 * processed_at}; an inbox written before keeps its records and its dedupe, indexes built beforehand
 * without blocking are taken over, an invalid one is refused, and the lookups use the new keys.
 */
@PostboxTest
class InboxKeyOrderMigrationTest {

  @Test
  void anInboxWrittenBeforeKeepsItsRecordsAndItsDedupe(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrateTo(ctx.dataSource(), 15);
    assertThat(indexColumns(ds, "postbox_inbox_pkey")).isEqualTo("consumer, message_id");
    InboxStore before = PostgresInboxStore.create(ds);
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      UUID id = UUID.randomUUID();
      ids.add(id);
      assertThat(before.processOnce("orders", id, c -> {})).isTrue();
      assertThat(before.processOnce("billing", id, c -> {})).isTrue();
    }

    assertThat(PostboxMigrations.migrateTo(ds, 16)).isEqualTo(1);

    assertThat(indexColumns(ds, "postbox_inbox_pkey")).isEqualTo("message_id, consumer");
    assertThat(indexColumns(ds, "postbox_inbox_processed_consumer"))
        .isEqualTo("processed_at, consumer");
    assertThat(oid(ds, "postbox_inbox_processed"))
        .as("the old retention index is dropped")
        .isZero();
    assertThat(count(ds, "SELECT count(*) FROM postbox_inbox")).isEqualTo(40);
    InboxStore after = PostgresInboxStore.create(ds);
    for (UUID id : ids) {
      assertThat(after.processOnce("orders", id, c -> {})).as("recorded before V16").isFalse();
    }
    assertThat(after.processBatch("billing", ids, (c, fresh) -> {})).isEmpty();
    assertThat(after.processOnce("shipping", ids.get(0), c -> {}))
        .as("another consumer of the same id")
        .isTrue();
  }

  @Test
  void indexesBuiltBeforehandWithoutBlockingAreTakenOver(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrateTo(ctx.dataSource(), 15);
    exec(
        ds,
        "CREATE UNIQUE INDEX CONCURRENTLY postbox_inbox_id_consumer"
            + " ON postbox_inbox (message_id, consumer)",
        "CREATE INDEX CONCURRENTLY postbox_inbox_processed_consumer"
            + " ON postbox_inbox (processed_at, consumer)");
    long pk = oid(ds, "postbox_inbox_id_consumer");
    long retention = oid(ds, "postbox_inbox_processed_consumer");

    assertThat(PostboxMigrations.migrateTo(ds, 16)).isEqualTo(1);

    assertThat(oid(ds, "postbox_inbox_pkey")).as("the prebuilt unique index").isEqualTo(pk);
    assertThat(oid(ds, "postbox_inbox_processed_consumer")).isEqualTo(retention);
    assertThat(PostgresInboxStore.create(ds).processOnce("c", UUID.randomUUID(), c -> {})).isTrue();
  }

  @Test
  void anInvalidIndexLeftByAFailedConcurrentBuildIsRefused(PostboxTestContext ctx)
      throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrateTo(ctx.dataSource(), 15);
    // two records of one consumer in one transaction share processed_at: a unique build fails
    // on them and leaves its index behind, invalid
    PostgresInboxStore.create(ds)
        .processBatch("c", List.of(UUID.randomUUID(), UUID.randomUUID()), (c, fresh) -> {});
    assertThatThrownBy(() ->
            exec(
                ds,
                "CREATE UNIQUE INDEX CONCURRENTLY postbox_inbox_processed_consumer"
                    + " ON postbox_inbox (processed_at, consumer)"))
        .isInstanceOf(SQLException.class);

    assertThatThrownBy(() -> PostboxMigrations.migrate(ds))
        .hasStackTraceContaining("postbox_inbox_processed_consumer is invalid");
    assertThat(indexColumns(ds, "postbox_inbox_pkey"))
        .as("the failed migration changed nothing")
        .isEqualTo("consumer, message_id");

    exec(ds, "DROP INDEX postbox_inbox_processed_consumer");
    assertThat(PostboxMigrations.migrateTo(ds, 16)).isEqualTo(1);
    assertThat(indexColumns(ds, "postbox_inbox_processed_consumer"))
        .isEqualTo("processed_at, consumer");
  }

  @Test
  void aTraceByMessageIdAndAPurgeByAgeSearchTheirIndexes(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    exec(
        ds,
        "INSERT INTO postbox_inbox (consumer, message_id, processed_at)"
            + " SELECT 'consumer-' || (n % 7), gen_random_uuid(), now() - n * interval '1 minute'"
            + " FROM generate_series(1, 20000) AS n",
        "ANALYZE postbox_inbox");
    String trace = plan(ds, "SELECT * FROM postbox_inbox WHERE message_id = ANY (?)");
    assertThat(trace).contains("postbox_inbox_pkey").contains("Index Cond: (message_id = ANY");
    String purge =
        plan(
            ds,
            "SELECT message_id FROM postbox_inbox WHERE consumer = ?"
                + " AND processed_at < now() - interval '19900 minutes 30 seconds' LIMIT 100");
    assertThat(purge)
        .contains("postbox_inbox_processed_consumer")
        .containsPattern("Index Cond: \\(\\(processed_at < .*\\) AND \\(consumer = ");

    InboxStore store = PostgresInboxStore.create(ds);
    assertThat(store.purge("consumer-3", Duration.ofMinutes(19_900).plusSeconds(30), 100_000))
        .as("consumer-3's records older than 19,900.5 minutes: n in [19901, 20000], n % 7 == 3")
        .isEqualTo(14);
  }

  private static String plan(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        // the table is small enough that a sequential scan may be cheaper: what is checked is
        // that an index can serve the condition, not the planner's choice for 20,000 rows
        s.execute("SET LOCAL enable_seqscan = off");
        s.execute("SET LOCAL enable_bitmapscan = off");
        s.execute("PREPARE q AS " + sql.replace("?", "$1"));
      }
      String param = sql.contains("ANY") ? "ARRAY[gen_random_uuid()]" : "'consumer-3'";
      StringBuilder out = new StringBuilder();
      try (PreparedStatement ps = c.prepareStatement("EXPLAIN EXECUTE q(" + param + ")");
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.append(rs.getString(1)).append('\n');
        }
      }
      try (Statement s = c.createStatement()) {
        s.execute("DEALLOCATE q"); // not transactional: the pooled connection would keep it
      }
      c.rollback();
      return out.toString();
    }
  }

  private static String indexColumns(DataSource ds, String index) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT string_agg(a.attname, ', ' ORDER BY k.ord)"
                    + " FROM pg_index i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord),"
                    + " pg_attribute a WHERE i.indexrelid = to_regclass(?)"
                    + " AND a.attrelid = i.indrelid AND a.attnum = k.attnum")) {
      ps.setString(1, index);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  private static long oid(DataSource ds, String relation) throws SQLException {
    return count(ds, "SELECT to_regclass('" + relation + "')::oid");
  }

  private static long count(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void exec(DataSource ds, String... sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      for (String q : sql) {
        s.execute(q);
      }
    }
  }
}
