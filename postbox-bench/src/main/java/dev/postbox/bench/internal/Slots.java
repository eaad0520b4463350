package dev.postbox.bench.internal;

import dev.postbox.bench.internal.BenchEnv.Db;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;

/** Drops the benchmark's replication slots when a streamer is done with them. */
final class Slots {

  private Slots() {}

  /**
   * Drops {@code slot} once its walsender is gone (a killed child's may linger), ending it after 30
   * s: an abandoned slot would hold WAL for the rest of the run.
   */
  static void drop(Db db, String slot) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    String drop =
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
            + " WHERE slot_name = ? AND NOT active";
    String terminate =
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
            + " WHERE slot_name = ? AND active";
    while (exists(db, slot)) {
      if (System.nanoTime() > deadline + Duration.ofSeconds(30).toNanos()) {
        throw new IllegalStateException("replication slot " + slot + " cannot be dropped");
      }
      if (System.nanoTime() > deadline) {
        run(db, terminate, slot);
      }
      run(db, drop, slot);
      Thread.sleep(100);
    }
  }

  private static boolean exists(Db db, String slot) {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT 1 FROM pg_replication_slots WHERE slot_name = ?")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read pg_replication_slots", e);
    }
  }

  private static void run(Db db, String sql, String slot) {
    try (Connection c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, slot);
      ps.executeQuery().close();
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop slot " + slot + ": " + e.getMessage(), e);
    }
  }
}
