package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.jdbc.Outbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Outbox write overhead: business transactions per second (8 clients, synchronous commit) with and
 * without the outbox insert. The business transaction inserts one order row; with the outbox it
 * also writes one 200-byte message in the same transaction. No relay runs.
 */
public final class WriteBench {

  static final int CLIENTS = 8;
  private static final int ROUNDS = 6;

  private final BenchEnv env;
  private final BenchConfig config;

  public WriteBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /**
   * Business-only and with-outbox transactions/s. The two run in alternating rounds (6 each, {@code
   * writeDuration / 6} long), so that load swings of a shared machine hit both alike.
   */
  public List<Measurement> run() throws InterruptedException {
    BusinessTx plain =
        new BusinessTx(env.database("write_plain", CLIENTS), Optional.empty(), "bench.write");
    BusinessTx withOutbox =
        new BusinessTx(
            env.database("write_outbox", CLIENTS), Optional.of(Outbox.postgres()), "bench.write");
    BusinessTx bareRow =
        new BusinessTx(env.database("write_bare", CLIENTS), Optional.empty(), "bench.write")
            .withBareRow();
    List<BusinessTx> variants = List.of(plain, withOutbox, bareRow);
    java.time.Duration round = config.writeDuration().dividedBy(ROUNDS);
    for (BusinessTx v : variants) {
      v.runFor(CLIENTS, round); // warm-up
    }
    long[] commits = new long[variants.size()];
    long[] nanos = new long[variants.size()];
    for (int r = 0; r < ROUNDS; r++) {
      for (int i = 0; i < variants.size(); i++) {
        int which = (r + i) % variants.size(); // rotate: none always goes first
        long t0 = System.nanoTime();
        commits[which] += variants.get(which).runFor(CLIENTS, round);
        nanos[which] += System.nanoTime() - t0;
      }
    }
    Measurement business =
        Measurement.of("business_only_tx_per_s", commits[0] / (nanos[0] / 1e9), "tx/s")
            .note("8 clients: INSERT order, commit (synchronous_commit=on); rounds rotate");
    Measurement outbox =
        Measurement.of("outbox_write_tx_per_s", commits[1] / (nanos[1] / 1e9), "tx/s")
            .note(
                "8 clients: INSERT order + Outbox.write (key lock, 200 B message), commit; no"
                    + " relay registered, so the insert trigger sends no NOTIFY (as while relays"
                    + " are draining)");
    Measurement bare =
        Measurement.of("bare_row_write_tx_per_s", commits[2] / (nanos[2] / 1e9), "tx/s")
            .note(
                "8 clients: INSERT order + INSERT of the same outbox row's columns into a table"
                    + " without index, key lock or trigger, commit: what any same-transaction"
                    + " outbox pays for a second statement and its row on this machine");
    return List.of(business, outbox, bare);
  }

  /**
   * One business transaction, run by many clients: an order row, optionally an outbox message.
   * Shared by the write and latency benchmarks. Thread-safe.
   */
  static final class BusinessTx {
    private static final String INSERT_ORDER =
        "INSERT INTO bench_order (customer, amount) VALUES (?, ?)";
    private static final String INSERT_BARE_ROW =
        "INSERT INTO bench_bare_row (message_id, topic, msg_key, lane, type, schema_version,"
            + " occurred_at, source, content_type, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    private final Db db;
    private final Optional<Outbox> outbox; // empty: business only
    private final String topic;
    private final AtomicLong seq = new AtomicLong();
    private boolean bareRow; // also insert the message's columns into bench_bare_row
    private dev.postbox.jdbc.cdc.EmitMessageOutbox emitter; // also emit the message (CdcBench)
    private dev.postbox.jdbc.cdc.EmitMessageOutbox emitWithCommit; // its inTransaction (CdcBench)

    BusinessTx(Db db, Optional<Outbox> outbox, String topic) {
      this.db = db;
      this.outbox = outbox;
      this.topic = topic;
    }

    /** Also inserts each message's outbox columns into {@code bench_bare_row} (no outbox). */
    BusinessTx withBareRow() {
      this.bareRow = true;
      return this;
    }

    /** Also emits each message as a logical message (the emit-message outbox; CdcBench). */
    BusinessTx withEmitMessage(dev.postbox.jdbc.cdc.EmitMessageOutbox emitter) {
      this.emitter = emitter;
      return this;
    }

    /**
     * Runs each transaction through {@link dev.postbox.jdbc.cdc.EmitMessageOutbox#inTransaction} (a
     * pooled connection per transaction; the message is emitted in the committing round trip).
     */
    BusinessTx withEmitInTransaction(dev.postbox.jdbc.cdc.EmitMessageOutbox emitter) {
      this.emitWithCommit = emitter;
      return this;
    }

    /** A connection for one client, auto-commit off. The caller closes it. */
    Connection connection() throws SQLException {
      Connection c = db.dataSource().getConnection();
      c.setAutoCommit(false);
      return c;
    }

    /**
     * Commits one transaction on {@code c} (unused, and may be null, {@linkplain
     * #withEmitInTransaction with inTransaction}); returns the outbox message's id (empty without
     * outbox).
     */
    Optional<java.util.UUID> commitOne(Connection c) throws SQLException {
      long i = seq.getAndIncrement();
      if (emitWithCommit != null) {
        dev.postbox.core.Message m = BenchEnv.message(topic, i);
        emitWithCommit.inTransaction(
            db.dataSource(),
            tx -> {
              insertOrder(tx.connection(), i);
              tx.write(m);
              return null;
            });
        return Optional.of(m.id());
      }
      Optional<java.util.UUID> id = Optional.empty();
      insertOrder(c, i);
      if (outbox.isPresent()) {
        dev.postbox.core.Message m = BenchEnv.message(topic, i);
        outbox.get().write(c, m);
        id = Optional.of(m.id());
      } else if (bareRow) {
        insertBareRow(c, BenchEnv.message(topic, i));
      } else if (emitter != null) {
        dev.postbox.core.Message m = BenchEnv.message(topic, i);
        emitter.write(c, m);
        id = Optional.of(m.id());
      }
      c.commit();
      return id;
    }

    private static void insertOrder(Connection c, long i) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(INSERT_ORDER)) {
        ps.setString(1, "key-" + (i % BenchEnv.KEYS));
        ps.setInt(2, ThreadLocalRandom.current().nextInt(1, 100));
        ps.executeUpdate();
      }
    }

    private static void insertBareRow(Connection c, dev.postbox.core.Message m)
        throws SQLException {
      try (PreparedStatement ps = c.prepareStatement(INSERT_BARE_ROW)) {
        ps.setObject(1, m.id());
        ps.setString(2, m.topic());
        ps.setString(3, m.key().orElse(null));
        ps.setShort(4, (short) Math.floorMod(m.key().orElse("").hashCode(), 64));
        ps.setString(5, m.type());
        ps.setInt(6, m.schemaVersion());
        ps.setTimestamp(7, java.sql.Timestamp.from(m.occurredAt()));
        ps.setString(8, m.source());
        ps.setString(9, m.payload().contentType());
        ps.setBytes(10, m.payload().unsafeBytes());
        ps.executeUpdate();
      }
    }

    /** Runs {@code clients} threads committing back to back for {@code d}; returns commits. */
    long runFor(int clients, java.time.Duration d) throws InterruptedException {
      AtomicLong commits = new AtomicLong();
      long end = System.nanoTime() + d.toNanos();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < clients; t++) {
        threads.add(
            Thread.ofPlatform()
                .start(() -> {
                  // inTransaction borrows its own: hold none (the pool has one per client)
                  try (Connection c = emitWithCommit == null ? connection() : null) {
                    while (System.nanoTime() < end) {
                      commitOne(c);
                      commits.incrementAndGet();
                    }
                  } catch (SQLException e) {
                    throw new IllegalStateException("business transaction failed", e);
                  }
                }));
      }
      for (Thread t : threads) {
        t.join();
      }
      return commits.get();
    }
  }
}
