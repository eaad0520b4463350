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
    java.time.Duration round = config.writeDuration().dividedBy(ROUNDS);
    plain.runFor(CLIENTS, round); // warm-up
    withOutbox.runFor(CLIENTS, round);
    long[] commits = new long[2];
    long[] nanos = new long[2];
    for (int r = 0; r < ROUNDS; r++) {
      for (int i = 0; i < 2; i++) {
        int which = (r % 2 == 0) ? i : 1 - i; // ABBA: neither always goes first
        long t0 = System.nanoTime();
        commits[which] += (which == 0 ? plain : withOutbox).runFor(CLIENTS, round);
        nanos[which] += System.nanoTime() - t0;
      }
    }
    Measurement business =
        Measurement.of("business_only_tx_per_s", commits[0] / (nanos[0] / 1e9), "tx/s")
            .note("8 clients: INSERT order, commit (synchronous_commit=on); rounds alternate");
    Measurement outbox =
        Measurement.of("outbox_write_tx_per_s", commits[1] / (nanos[1] / 1e9), "tx/s")
            .note(
                "8 clients: INSERT order + Outbox.write (key lock, 200 B message), commit; no"
                    + " relay registered, so the insert trigger sends no NOTIFY (as while relays"
                    + " are draining)");
    return List.of(business, outbox);
  }

  /**
   * One business transaction, run by many clients: an order row, optionally an outbox message.
   * Shared by the write and latency benchmarks. Thread-safe.
   */
  static final class BusinessTx {
    private static final String INSERT_ORDER =
        "INSERT INTO bench_order (customer, amount) VALUES (?, ?)";
    private final Db db;
    private final Optional<Outbox> outbox; // empty: business only
    private final String topic;
    private final AtomicLong seq = new AtomicLong();

    BusinessTx(Db db, Optional<Outbox> outbox, String topic) {
      this.db = db;
      this.outbox = outbox;
      this.topic = topic;
    }

    /** A connection for one client, auto-commit off. The caller closes it. */
    Connection connection() throws SQLException {
      Connection c = db.dataSource().getConnection();
      c.setAutoCommit(false);
      return c;
    }

    /** Commits one transaction; returns the outbox message's id (empty without outbox). */
    Optional<java.util.UUID> commitOne(Connection c) throws SQLException {
      long i = seq.getAndIncrement();
      Optional<java.util.UUID> id = Optional.empty();
      try (PreparedStatement ps = c.prepareStatement(INSERT_ORDER)) {
        ps.setString(1, "key-" + (i % BenchEnv.KEYS));
        ps.setInt(2, ThreadLocalRandom.current().nextInt(1, 100));
        ps.executeUpdate();
      }
      if (outbox.isPresent()) {
        dev.postbox.core.Message m = BenchEnv.message(topic, i);
        outbox.get().write(c, m);
        id = Optional.of(m.id());
      }
      c.commit();
      return id;
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
                  try (Connection c = connection()) {
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
