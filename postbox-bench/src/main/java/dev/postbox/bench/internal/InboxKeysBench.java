package dev.postbox.bench.internal;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.core.MessageId;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What the inbox's key order (migration V16) changes: PostgreSQL's CPU per recorded message for a
 * batch claim ({@code InboxStore.processBatch} of 500 new UUIDv7 ids, no work), on an inbox at
 * version 15 (primary key {@code (consumer, message_id)}, retention index {@code (consumer,
 * processed_at)}) and one at version 16 ({@code (message_id, consumer)}, {@code (processed_at,
 * consumer)}), each shared with two other consumers' older records (one whose name sorts before the
 * measured consumer's, one after), with one connection and with twelve (the batch race's
 * transactions in flight). The two inboxes take turns, round after round; each figure is the median
 * of its rounds.
 */
public final class InboxKeysBench {

  /** Ids per claim: the batch race's batch. */
  static final int BATCH = 500;

  /** Connections claiming at once in the concurrent case: the batch race's in-flight batches. */
  static final int CONCURRENT = 12;

  /** Other consumers' records already in each inbox (per consumer). */
  private static final int OTHERS = 200_000;

  private static final String CONSUMER = "bench-eob-12";

  private final BenchEnv env;
  private final BenchConfig config;

  public InboxKeysBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  public List<Measurement> run() throws Exception {
    int rounds = config.quick() ? 2 : 7;
    int batches = config.quick() ? 4 : 40; // per connection and round
    int others = config.quick() ? 10_000 : OTHERS;
    HikariDataSource v15 = inbox("inbox_v15", 15, others);
    HikariDataSource v16 = inbox("inbox_v16", 16, others);
    ProcessCpu cpu = ProcessCpu.of(v16);
    InboxStore s15 = PostgresInboxStore.create(v15);
    InboxStore s16 = PostgresInboxStore.create(v16);
    ExecutorService pool = Executors.newFixedThreadPool(CONCURRENT);
    try {
      List<Measurement> out = new ArrayList<>();
      for (int connections : List.of(1, CONCURRENT)) {
        String suffix = connections == 1 ? "_1conn" : "_" + connections + "conn";
        int perConnection = connections == 1 ? batches * 4 : batches;
        List<Measurement> pair =
            Repeated.interleaved(
                List.of(
                    "inbox_claim_v15_keys_pg_us_per_record" + suffix,
                    "inbox_claim_v16_keys_pg_us_per_record" + suffix),
                "us",
                rounds,
                List.of(
                    round -> claims(cpu, pool, s15, connections, perConnection),
                    round -> claims(cpu, pool, s16, connections, perConnection)));
        out.addAll(pair);
        out.add(
            Measurement.of(
                    "inbox_claim_v16_vs_v15" + suffix,
                    pair.get(1).value() / pair.get(0).value(),
                    "x")
                .note(
                    "PostgreSQL CPU per recorded message, version 16's key order over version"
                        + " 15's (below 1: cheaper); "
                        + connections
                        + " connection(s) claiming "
                        + BATCH
                        + " new ids each, the inbox shared with two other consumers' "
                        + others
                        + " records each"));
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * One round: {@code connections} threads each claim {@code perConnection} batches of new ids;
   * PostgreSQL's CPU (every process of the server) per recorded message.
   */
  private static Repeated.Run claims(
      ProcessCpu cpu, ExecutorService pool, InboxStore store, int connections, int perConnection)
      throws Exception {
    var before = cpu.snapshot();
    long t0 = System.nanoTime();
    List<Future<?>> running = new ArrayList<>();
    for (int i = 0; i < connections; i++) {
      running.add(
          pool.submit(() -> {
            for (int b = 0; b < perConnection; b++) {
              List<UUID> ids = new ArrayList<>(BATCH);
              for (int k = 0; k < BATCH; k++) {
                ids.add(MessageId.next());
              }
              if (store.processBatch(CONSUMER, ids, (c, fresh) -> {}).size() != BATCH) {
                throw new IllegalStateException("a claim of new ids recorded fewer than all");
              }
            }
            return null;
          }));
    }
    for (Future<?> f : running) {
      f.get();
    }
    long records = (long) connections * perConnection * BATCH;
    double seconds = (System.nanoTime() - t0) / 1e9;
    double us = ProcessCpu.perMessageUs(before, cpu.snapshot(), records).get("postgres");
    return new Repeated.Run(
        us,
        String.format(
            java.util.Locale.ROOT,
            "%,d records per round, %.0f records/s",
            records,
            records / seconds));
  }

  /**
   * A schema migrated to {@code version} whose inbox holds {@code others} older records of a
   * consumer named before the measured one and as many of one after.
   */
  private HikariDataSource inbox(String prefix, int version, int others) {
    HikariDataSource ds = env.emptySchema(prefix, CONCURRENT + 2).dataSource();
    PostboxMigrations.migrateTo(ds, version);
    BenchEnv.execute(
        ds,
        "INSERT INTO postbox_inbox (consumer, message_id, processed_at)"
            + " SELECT c, gen_random_uuid(), now() - interval '1 hour'"
            + " FROM unnest(ARRAY['bench-a-other', 'bench-z-other']) AS c,"
            + " generate_series(1, "
            + others
            + ")",
        "VACUUM ANALYZE postbox_inbox");
    return ds;
  }
}
