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

  private final BenchEnv env;
  private final BenchConfig config;

  public WriteBench(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Transactions/s with ({@code withOutbox}) or without the outbox write. */
  public Measurement run(boolean withOutbox) throws InterruptedException {
    Db db = env.database(withOutbox ? "write_outbox" : "write_plain", CLIENTS);
    Outbox outbox = Outbox.postgres();
    String topic = "bench.write";
    BusinessTx tx = new BusinessTx(db, withOutbox ? Optional.of(outbox) : Optional.empty(), topic);
    tx.runFor(CLIENTS, config.writeDuration().dividedBy(5)); // warm-up
    long t0 = System.nanoTime();
    long n = tx.runFor(CLIENTS, config.writeDuration());
    double rate = Rate.since(t0, n);
    return withOutbox
        ? Measurement.of("outbox_write_tx_per_s", rate, "tx/s")
            .note("8 clients: INSERT order + Outbox.write (key lock, 200 B message), commit")
        : Measurement.of("business_only_tx_per_s", rate, "tx/s")
            .note("8 clients: INSERT order, commit (synchronous_commit=on)");
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
