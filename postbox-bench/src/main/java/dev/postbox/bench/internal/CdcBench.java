package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The CDC race ({@code ./postbox bench --only cdc}): the write path, then the drain of a
 * pre-written backlog by the CDC relay (one batch in flight, then pipelined) and by Debezium's
 * embedded connector, all reading the same WAL, then commit to broker-ack latency at fixed rates
 * ({@link CdcLatencyBench}). Every slot and publication is created first, then the backlog is
 * written, then each streamer is started in turn and timed to its last broker acknowledgement, so
 * no figure is bounded by the writer.
 *
 * <p>Order, and why: Debezium first (it reads the WAL as written), then the CDC relay with one
 * batch in flight, then pipelined; each CDC run marks the rows it published (retention kept, so the
 * next run finds them to mark again), and a later run decodes that extra WAL too (filtered out by
 * the publication): any handicap falls on the later, faster-claimed runs.
 */
public final class CdcBench {

  private final BenchEnv env;
  private final BenchConfig config;

  public CdcBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Every figure of the group, in report order. */
  public List<Measurement> run() throws Exception {
    List<Measurement> all = new ArrayList<>(writePath());
    all.addAll(drain());
    all.addAll(new CdcLatencyBench(env, config).run());
    return all;
  }

  /**
   * The write path: business-only transactions, with the table outbox, and with the emit-message
   * outbox both ways (a write, then the commit; and {@code inTransaction}, which emits in the
   * committing round trip), 8 clients each, in rotating rounds (as {@link WriteBench}) so load
   * swings hit all alike.
   */
  public List<Measurement> writePath() throws InterruptedException {
    int clients = WriteBench.CLIENTS;
    int rounds = 6;
    List<WriteBench.BusinessTx> variants =
        List.of(
            new WriteBench.BusinessTx(
                env.database("cdcw_plain", clients), java.util.Optional.empty(), "bench.cdc"),
            new WriteBench.BusinessTx(
                env.database("cdcw_table", clients),
                java.util.Optional.of(dev.postbox.jdbc.Outbox.postgres()),
                "bench.cdc"),
            new WriteBench.BusinessTx(
                    env.database("cdcw_emit", clients), java.util.Optional.empty(), "bench.cdc")
                .withEmitMessage(dev.postbox.jdbc.cdc.EmitMessageOutbox.create()),
            new WriteBench.BusinessTx(
                    env.database("cdcw_emitc", clients), java.util.Optional.empty(), "bench.cdc")
                .withEmitInTransaction(dev.postbox.jdbc.cdc.EmitMessageOutbox.create()));
    Duration round = config.writeDuration().dividedBy(rounds);
    for (WriteBench.BusinessTx v : variants) {
      v.runFor(clients, round); // warm-up
    }
    int n = variants.size();
    long[] commits = new long[n];
    long[] nanos = new long[n];
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < n; i++) {
        int which = (r + i) % n;
        long t0 = System.nanoTime();
        commits[which] += variants.get(which).runFor(clients, round);
        nanos[which] += System.nanoTime() - t0;
      }
    }
    Measurement plain =
        Measurement.of("cdc_business_only_tx_per_s", commits[0] / (nanos[0] / 1e9), "tx/s")
            .note("8 clients: INSERT order, commit (synchronous_commit=on); rounds rotate");
    Measurement table =
        Measurement.of("cdc_table_outbox_tx_per_s", commits[1] / (nanos[1] / 1e9), "tx/s")
            .note("8 clients: INSERT order + Outbox.write (outbox row, key lock), commit")
            .against(plain)
            .target(Target.atLeast(0.8));
    Measurement emit =
        Measurement.of("cdc_emit_message_outbox_tx_per_s", commits[2] / (nanos[2] / 1e9), "tx/s")
            .note(
                "8 clients: INSERT order + EmitMessageOutbox.write (pg_logical_emit_message, no"
                    + " row; a round trip of its own), commit")
            .against(plain);
    Measurement emitWithCommit =
        Measurement.of(
                "cdc_emit_message_in_transaction_tx_per_s", commits[3] / (nanos[3] / 1e9), "tx/s")
            .note(
                "8 clients: EmitMessageOutbox.inTransaction: INSERT order, then the emission and"
                    + " COMMIT in one round trip (as many round trips as business-only; a pooled"
                    + " connection per transaction)")
            .against(plain)
            .target(Target.atLeast(0.8));
    Measurement saving =
        Measurement.of("cdc_emit_vs_table_outbox", emit.value() / table.value(), "x")
            .note("cdc_emit_message_outbox_tx_per_s / cdc_table_outbox_tx_per_s");
    return List.of(plain, table, emit, emitWithCommit, saving);
  }

  /** The drain figures, in report order. */
  public List<Measurement> drain() throws Exception {
    int n = config.relayEvents();
    Db db = env.database("cdc", 6);
    String topic = env.primedTopic("cdc", 6);
    String base = "bench_" + db.schema().toLowerCase(Locale.ROOT);
    String publication = base + "_pub";
    String one = base + "_r1";
    String pipelined = base + "_r4";
    String debezium = base + "_dbz";
    BenchEnv.execute(
        db.dataSource(),
        "CREATE PUBLICATION "
            + publication
            + " FOR TABLE \""
            + db.schema()
            + "\".postbox_outbox WITH (publish = 'insert')",
        "CREATE PUBLICATION " + debezium + "_pub FOR TABLE \"" + db.schema() + "\".postbox_outbox",
        "SELECT pg_create_logical_replication_slot('" + one + "', 'pgoutput')",
        "SELECT pg_create_logical_replication_slot('" + pipelined + "', 'pgoutput')",
        "SELECT pg_create_logical_replication_slot('" + debezium + "', 'pgoutput')");
    BenchEnv.seedOutbox(db, topic, n); // the backlog: every slot holds it now
    List<Measurement> out = new ArrayList<>();
    Measurement dbz = new DebeziumPeer(env, config).drainPrewritten(db, debezium, n);
    out.add(dbz);
    Measurement r1 = relay(db, one, publication, 1, n, "cdc_relay_drain_1_in_flight_events_per_s");
    out.add(r1.against(dbz));
    Measurement r4 =
        relay(db, pipelined, publication, 4, n, "cdc_relay_drain_events_per_s")
            .against(dbz)
            .target(Target.atLeast(2));
    out.add(r4);
    out.add(
        Measurement.of("cdc_pipelined_vs_1_in_flight", r4.value() / r1.value(), "x")
            .note("cdc_relay_drain_events_per_s / cdc_relay_drain_1_in_flight_events_per_s"));
    BenchEnv.execute(
        db.dataSource(),
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
            + " WHERE slot_name IN ('"
            + one
            + "', '"
            + pipelined
            + "', '"
            + debezium
            + "') AND NOT active");
    return out;
  }

  private Measurement relay(
      Db db, String slot, String publication, int inFlight, int n, String name)
      throws InterruptedException {
    long start = System.nanoTime();
    try (CdcRelay relay =
        CdcRelay.builder(
                db.dataSource(),
                env.jdbcUrl(),
                KafkaRelayPublisher.builder(env.bootstrap()).build())
            .instanceId("bench-cdc-" + inFlight)
            .slotName(slot)
            .publicationName(publication)
            .maxInFlightBatches(inFlight)
            .build()) {
      relay.start();
      BenchEnv.awaitCount(
          "cdc relay acks", () -> relay.stats().published(), n, Duration.ofMinutes(10));
      double rate = Rate.since(start, n);
      return Measurement.of(name, rate, "events/s")
          .note(
              n
                  + " pre-written outbox rows streamed from the slot (pgoutput), published"
                  + " (acks=all, idempotent, CloudEvents mapping) and marked, batch 2,000, "
                  + inFlight
                  + " batch(es) in flight; from start() to the last broker ack");
    }
  }
}
