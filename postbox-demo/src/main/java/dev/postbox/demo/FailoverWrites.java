package dev.postbox.demo;

import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.TransactionWork;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * The orders service's transactions across a database failover ({@code ./postbox demo --cluster}):
 * a transaction that fails is retried until the new primary accepts it; one whose commit was cut
 * off by the primary's death is ambiguous, so before retrying the service asks the new primary
 * whether its event is there ({@code postbox_outbox.message_id}). With the pair's synchronous
 * standby that answer is the truth: a commit the old primary acknowledged, or had flushed to the
 * standby, is on the new primary; any other is gone, and the order is placed again (its key's
 * sequence number was rolled back with it). So an order is recorded as committed exactly when its
 * event exists, and the audit's "unexpected" and "missing" stay meaningful across the failover.
 */
final class FailoverWrites {

  private static final Duration PAUSE = Duration.ofMillis(100);

  private FailoverWrites() {}

  /**
   * Runs {@code work} (which writes one event and returns it) in an outbox transaction until it
   * commits, or until {@code patience} has passed (then the last failure is thrown).
   */
  static Message commit(
      Outbox outbox, DataSource ds, Duration patience, TransactionWork<Message> work)
      throws InterruptedException {
    long deadline = System.nanoTime() + patience.toNanos();
    while (true) {
      AtomicReference<Message> written = new AtomicReference<>();
      try {
        return outbox.inTransaction(
            ds,
            tx -> {
              Message m = work.execute(tx);
              written.set(m);
              return m;
            });
      } catch (RuntimeException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        if (written.get() != null && committed(ds, written.get().id(), deadline)) {
          return written.get(); // the commit's answer was lost, not the commit
        }
        Thread.sleep(PAUSE);
      }
    }
  }

  /** Whether the event {@code id} is in the outbox, asking until the database answers. */
  private static boolean committed(DataSource ds, UUID id, long deadline)
      throws InterruptedException {
    while (true) {
      try (Connection c = ds.getConnection();
          PreparedStatement ps =
              c.prepareStatement("SELECT count(*) FROM postbox_outbox WHERE message_id = ?")) {
        ps.setObject(1, id);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1) > 0;
        }
      } catch (SQLException e) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "the database did not answer whether event " + id + " was committed", e);
        }
        Thread.sleep(PAUSE);
      }
    }
  }
}
