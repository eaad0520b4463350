package dev.postbox.bench.internal;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.MessageId;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.EmitMessageOutbox;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * The figures behind the capacity model ({@code ./postbox bench --only capacity}): what each event
 * costs PostgreSQL in WAL bytes, table and index size and dead tuples, measured around a fixed
 * number of transactions ({@code pg_current_wal_insert_lsn()} before and after; the server is the
 * bench's own, autovacuum off on the measured tables). Counts of bytes, not rates: a loaded machine
 * changes them little. Each write phase starts right after a {@code CHECKPOINT}, so no timed
 * checkpoint falls inside it and the few full-page images are those of a fresh table; the relay's
 * drain and the outbox's {@code VACUUM} follow their write phase without one (rows written and
 * removed within one checkpoint cycle, as by a relay that keeps up); the inbox purge starts after
 * one (records purged after their retention are older than the last checkpoint, so the purge pays a
 * full-page image for each page it first touches).
 */
public final class CapacityBench {

  /** Clients writing at once (the WAL bytes do not depend on it; the phase's length does). */
  private static final int CLIENTS = 4;

  /** Ids per inbox claim: the batch consumer's batch in the consumer benchmarks. */
  private static final int INBOX_BATCH = 500;

  private static final String CONSUMER = "bench-capacity";

  private final BenchEnv env;
  private final BenchConfig config;

  public CapacityBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Every figure of the group, in report order. */
  public List<Measurement> run() throws Exception {
    int n = config.quick() ? 2_000 : 10_000;
    String topic = env.primedTopic("capacity", 6);
    List<Measurement> out = new ArrayList<>();

    Db plainDb = database("cap_plain", CLIENTS);
    long business = writes(plainDb, new WriteBench.BusinessTx(plainDb, Optional.empty(), topic), n);
    Measurement plain =
        perEvent("capacity_wal_business_only_bytes_per_tx", business, n)
            .note(n + " transactions: INSERT order, commit; WAL bytes per transaction");
    out.add(plain);

    Db tableDb = database("cap_table", CLIENTS);
    long sizeBefore = size(tableDb, "postbox_outbox");
    long table =
        writes(
            tableDb, new WriteBench.BusinessTx(tableDb, Optional.of(Outbox.postgres()), topic), n);
    long outboxGrowth = size(tableDb, "postbox_outbox") - sizeBefore;
    out.add(
        perEvent("capacity_wal_table_outbox_bytes_per_event", table, n)
            .note(
                n
                    + " transactions: INSERT order + Outbox.write (200-byte payload, key lock),"
                    + " commit; WAL bytes per transaction"));
    out.add(
        perEvent("capacity_wal_table_outbox_extra_bytes_per_event", table - business, n)
            .note(
                "capacity_wal_table_outbox_bytes_per_event - capacity_wal_business_only_bytes_per_tx"));

    Db emitDb = database("cap_emit", CLIENTS);
    long emit =
        writes(
            emitDb,
            new WriteBench.BusinessTx(emitDb, Optional.empty(), topic)
                .withEmitMessage(EmitMessageOutbox.create()),
            n);
    out.add(
        perEvent("capacity_wal_emit_message_bytes_per_event", emit, n)
            .note(
                n
                    + " transactions: INSERT order + EmitMessageOutbox.write"
                    + " (pg_logical_emit_message, no row), commit; WAL bytes per transaction"));
    out.add(
        perEvent("capacity_wal_emit_message_extra_bytes_per_event", emit - business, n)
            .note(
                "capacity_wal_emit_message_bytes_per_event - capacity_wal_business_only_bytes_per_tx"));

    out.add(
        Measurement.of("capacity_outbox_size_mb_per_10k_rows", mb(outboxGrowth) * 10_000 / n, "MB")
            .note(
                "pg_total_relation_size(postbox_outbox) growth (heap, indexes, TOAST) over "
                    + n
                    + " written rows, per 10,000"));

    // the relay drains the table outbox's rows, deleting them (retention 0)
    long delete = drain(tableDb, n, Duration.ZERO);
    out.add(
        perEvent("capacity_wal_relay_delete_bytes_per_event", delete, n)
            .note(
                "the polling relay (1 instance, 64 lanes, batch 2,000) claims, publishes and"
                    + " deletes (retention 0) "
                    + n
                    + " rows: WAL bytes per event, leases and heartbeats included"));
    out.add(
        Measurement.of(
                "capacity_outbox_dead_tuples_per_10k_deleted",
                deadTuples(tableDb, "postbox_outbox") * 10_000.0 / n,
                "rows")
            .note(
                "pg_stat_user_tables.n_dead_tup of postbox_outbox after the relay's deletes, per 10,000"));
    long[] vacuum = vacuum(tableDb, "postbox_outbox");
    out.add(
        perEvent("capacity_wal_outbox_vacuum_bytes_per_event", vacuum[0], n)
            .note(
                "VACUUM postbox_outbox after the relay deleted " + n + " rows: WAL bytes per row"));
    out.add(
        Measurement.of("capacity_outbox_vacuum_ms_per_10k", vacuum[1] / 1e6 * 10_000 / n, "ms")
            .note(
                "the same VACUUM's wall time per 10,000 dead rows (a loaded machine: indicative)"));

    // the relay marking rows published (the default retention of 1 h keeps them)
    Db markDb = database("cap_mark", CLIENTS);
    BenchEnv.seedOutbox(markDb, topic, n);
    long mark = drain(markDb, n, Relay.DEFAULT_RETENTION);
    out.add(
        perEvent("capacity_wal_relay_mark_bytes_per_event", mark, n)
            .note(
                "the polling relay claims, publishes and marks published (retention 1 h) "
                    + n
                    + " rows: WAL bytes per event"));
    out.add(
        Measurement.of(
                "capacity_outbox_dead_tuples_per_10k_marked",
                deadTuples(markDb, "postbox_outbox") * 10_000.0 / n,
                "rows")
            .note("n_dead_tup of postbox_outbox after the relay marked the rows, per 10,000"));

    out.addAll(inbox(n));
    return out;
  }

  /**
   * The inbox: recorded in batches (the batch consumer) and one per transaction; purged; vacuumed.
   */
  private List<Measurement> inbox(int n) throws Exception {
    List<Measurement> out = new ArrayList<>();
    Db batchDb = database("cap_inbox_b", 2);
    InboxStore batch = PostgresInboxStore.create(batchDb.dataSource());
    long sizeBefore = size(batchDb, "postbox_inbox");
    long batchWal =
        measured(
            batchDb,
            () -> {
              for (int done = 0; done < n; done += INBOX_BATCH) {
                List<UUID> ids = new ArrayList<>(INBOX_BATCH);
                for (int k = 0; k < Math.min(INBOX_BATCH, n - done); k++) {
                  ids.add(MessageId.next());
                }
                batch.processBatch(CONSUMER, ids, (c, fresh) -> {});
              }
            });
    long inboxGrowth = size(batchDb, "postbox_inbox") - sizeBefore;
    out.add(
        perEvent("capacity_wal_inbox_batch_bytes_per_msg", batchWal, n)
            .note(
                n
                    + " messages recorded by InboxStore.processBatch, "
                    + INBOX_BATCH
                    + " new ids per transaction (the batch consumer's claim), no work"));
    out.add(
        Measurement.of("capacity_inbox_size_mb_per_10k_rows", mb(inboxGrowth) * 10_000 / n, "MB")
            .note(
                "pg_total_relation_size(postbox_inbox) growth over " + n + " records, per 10,000"));

    Db singleDb = database("cap_inbox_s", CLIENTS);
    InboxStore single = PostgresInboxStore.create(singleDb.dataSource());
    long singleWal =
        measured(
            singleDb,
            () ->
                parallel(
                    n,
                    count -> {
                      for (int i = 0; i < count; i++) {
                        single.processOnce(CONSUMER, MessageId.next(), c -> {});
                      }
                    }));
    out.add(
        perEvent("capacity_wal_inbox_single_bytes_per_msg", singleWal, n)
            .note(
                n
                    + " messages recorded by InboxStore.processOnce, one transaction each"
                    + " (EFFECTIVELY_ONCE, one record at a time), no work"));

    long purgeWal =
        measured(
            batchDb,
            () -> {
              while (batch.purge(CONSUMER, Duration.ZERO, 5_000) > 0) {
                // purging in the retention job's batches until none is left
              }
            });
    out.add(
        perEvent("capacity_wal_inbox_purge_bytes_per_msg", purgeWal, n)
            .note("InboxStore.purge of the " + n + " batch-recorded ids (age 0, 5,000 per call)"));
    batchDb.dataSource().close(); // its server processes exit and report their statistics
    out.add(
        Measurement.of(
                "capacity_inbox_dead_tuples_per_10k_purged",
                deadTuples(batchDb, "postbox_inbox") * 10_000.0 / n,
                "rows")
            .note("n_dead_tup of postbox_inbox after the purge, per 10,000"));
    long[] vacuum = vacuum(batchDb, "postbox_inbox");
    out.add(
        perEvent("capacity_wal_inbox_vacuum_bytes_per_msg", vacuum[0], n)
            .note(
                "VACUUM postbox_inbox after the purge of " + n + " records: WAL bytes per record"));
    out.add(
        Measurement.of("capacity_inbox_vacuum_ms_per_10k", vacuum[1] / 1e6 * 10_000 / n, "ms")
            .note("the same VACUUM's wall time per 10,000 purged records (indicative)"));
    return out;
  }

  /** WAL bytes of {@code n} business transactions of {@code tx}, {@value #CLIENTS} clients. */
  private long writes(Db db, WriteBench.BusinessTx tx, int n) throws Exception {
    return measured(
        db,
        () ->
            parallel(
                n,
                count -> {
                  try (Connection c = tx.connection()) {
                    for (int i = 0; i < count; i++) {
                      tx.commitOne(c);
                    }
                  }
                }));
  }

  /**
   * WAL bytes of one polling relay draining the {@code n} rows of {@code db}'s outbox; closes the
   * pool afterwards (its server processes then report their table statistics).
   */
  private long drain(Db db, int n, Duration retention) throws Exception {
    long before = lsn(db);
    try (Relay relay =
        Relay.builder(
                PostgresRelayStore.create(db.dataSource()),
                KafkaRelayPublisher.builder(env.bootstrap()).build())
            .instanceId("bench-capacity")
            .retention(retention)
            .build()) {
      relay.start();
      BenchEnv.awaitCount(
          "capacity relay", () -> relay.stats().published(), n, Duration.ofSeconds(60));
    }
    long wal = lsn(db) - before;
    db.dataSource().close();
    return wal;
  }

  /** {@code [WAL bytes, wall nanos]} of a {@code VACUUM} of {@code table}. */
  private long[] vacuum(Db db, String table) throws SQLException {
    try (HikariDataSource probe = env.postgres().dataSource(db.schema(), 1);
        Connection c = probe.getConnection();
        Statement s = c.createStatement()) {
      long before = lsn(s);
      long t0 = System.nanoTime();
      s.execute("VACUUM " + table);
      long nanos = System.nanoTime() - t0;
      return new long[] {lsn(s) - before, nanos};
    }
  }

  private interface Work {
    void run() throws Exception;
  }

  private interface Share {
    void run(int count) throws Exception;
  }

  /** {@link #CLIENTS} threads sharing {@code n} units of work. */
  private static void parallel(int n, Share share) throws Exception {
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < CLIENTS; t++) {
      int count = n / CLIENTS + (t < n % CLIENTS ? 1 : 0);
      threads.add(
          Thread.ofPlatform()
              .start(() -> {
                try {
                  share.run(count);
                } catch (Throwable e) {
                  failures.add(e);
                }
              }));
    }
    for (Thread t : threads) {
      t.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a capacity writer failed", failures.get(0));
    }
  }

  /** WAL bytes written while {@code work} ran, after a checkpoint. */
  private long measured(Db db, Work work) throws Exception {
    return measured(db, true, work);
  }

  /** WAL bytes written while {@code work} ran, after a checkpoint if {@code checkpoint}. */
  private long measured(Db db, boolean checkpoint, Work work) throws Exception {
    try (HikariDataSource probe = env.postgres().dataSource(db.schema(), 1);
        Connection c = probe.getConnection();
        Statement s = c.createStatement()) {
      if (checkpoint) {
        s.execute("CHECKPOINT");
      }
      long before = lsn(s);
      work.run();
      return lsn(s) - before;
    }
  }

  private long lsn(Db db) throws SQLException {
    try (HikariDataSource probe = env.postgres().dataSource(db.schema(), 1);
        Connection c = probe.getConnection();
        Statement s = c.createStatement()) {
      return lsn(s);
    }
  }

  private static long lsn(Statement s) throws SQLException {
    try (ResultSet rs =
        s.executeQuery("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private long size(Db db, String table) throws SQLException {
    return single(db, "SELECT pg_total_relation_size('" + table + "')");
  }

  /**
   * {@code n_dead_tup} of {@code table}, read once the server processes that changed it have
   * reported (the statistics are flushed at the latest when a process exits or idles).
   */
  private long deadTuples(Db db, String table) throws Exception {
    String sql =
        "SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = '"
            + db.schema()
            + "' AND relname = '"
            + table
            + "'";
    try (HikariDataSource probe = env.postgres().dataSource(db.schema(), 1);
        Connection c = probe.getConnection();
        Statement s = c.createStatement()) {
      long last = -1;
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      // the statistics arrive in one flush: wait until the figure is non-zero and stable for 2 s
      long stableSince = System.nanoTime();
      while (System.nanoTime() < deadline) {
        long now;
        try (ResultSet rs = s.executeQuery(sql)) {
          now = rs.next() ? rs.getLong(1) : 0;
        }
        if (now != last) {
          last = now;
          stableSince = System.nanoTime();
        } else if (now > 0 && System.nanoTime() - stableSince > Duration.ofSeconds(2).toNanos()) {
          return now;
        }
        Thread.sleep(200);
      }
      return last;
    }
  }

  private long single(Db db, String sql) throws SQLException {
    try (HikariDataSource probe = env.postgres().dataSource(db.schema(), 1);
        Connection c = probe.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** A schema with the Postbox tables, autovacuum off on the measured ones. */
  private Db database(String prefix, int poolSize) {
    Db db = env.database(prefix, poolSize);
    BenchEnv.execute(
        db.dataSource(),
        "ALTER TABLE postbox_outbox SET (autovacuum_enabled = false)",
        "ALTER TABLE postbox_inbox SET (autovacuum_enabled = false)",
        "ALTER TABLE bench_order SET (autovacuum_enabled = false)");
    return db;
  }

  private static Measurement perEvent(String name, long bytes, int n) {
    return Measurement.of(name, (double) bytes / n, "B");
  }

  private static double mb(long bytes) {
    return bytes / (1024.0 * 1024);
  }
}
