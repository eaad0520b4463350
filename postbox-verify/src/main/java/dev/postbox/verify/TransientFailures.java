package dev.postbox.verify;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * The switch of the parking scenario's handler failures ({@code verify_control.failing}): on for 4
 * to 8 seconds, off for 1 to 3, until the phase ends; off at the heal. While it is on, the
 * consumers' handler fails for the {@linkplain ConsumerMain#failsTransiently flaky keys}, so that
 * they are parked (with their later records) and unparked when it is off again.
 *
 * <p>Thread-safe.
 */
final class TransientFailures {

  private final DataSource ds;
  private final FaultLog log;

  TransientFailures(DataSource ds, FaultLog log) {
    this.ds = ds;
    this.log = log;
  }

  /** Switches on and off (seeded) until {@code stop}; leaves it off. */
  void run(SplittableRandom r, AtomicBoolean stop) {
    try {
      while (!stop.get()) {
        if (!sleepUnless(stop, 1_000 + r.nextInt(2_000))) {
          return;
        }
        // mostly on: records must arrive while it is on for keys to be parked, and the database
        // faults stall the flow now and then
        long onMs = 4_000 + r.nextInt(4_000);
        if (set(true)) {
          log.note("transient-failures", "handler fails for the flaky keys for " + onMs + " ms");
        }
        sleepUnless(stop, onMs);
        set(false);
      }
    } finally {
      off();
    }
  }

  /** Switches off, retrying while the database is away (up to a minute). */
  void off() {
    for (int i = 0; i < 600 && !set(false); i++) {
      sleepUnless(new AtomicBoolean(), 100);
    }
  }

  private boolean set(boolean failing) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE verify_control SET failing = ?")) {
      ps.setBoolean(1, failing);
      ps.executeUpdate();
      return true;
    } catch (SQLException e) {
      return false; // the database is restarting: this window is skipped (or retried by off())
    }
  }

  private static boolean sleepUnless(AtomicBoolean stop, long ms) {
    long until = System.nanoTime() + ms * 1_000_000;
    while (!stop.get() && System.nanoTime() < until) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return !stop.get();
  }
}
