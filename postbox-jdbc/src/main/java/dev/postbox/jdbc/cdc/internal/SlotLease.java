package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fenced lease on one replication slot ({@code postbox_cdc_slot}, migration V13): one instance
 * at a time may stream the slot, publish what it streamed, mark it and confirm it. Each acquisition
 * bumps the epoch; everything the holder does carries the epoch it was streamed under, and a step
 * whose epoch is no longer held is dropped.
 *
 * <p>Locally the lease counts as held until 4/5 of its TTL after the start of the last successful
 * renewal (measured on the monotonic {@link Ticker}, before the statement was sent, so the local
 * deadline always falls before the database's {@code lease_until}); a process paused past that
 * finds its lease gone when it resumes, before a successor can have taken it. In the database the
 * epoch fences the marks ({@link #fence}); PostgreSQL itself fences the confirmations, because a
 * successor ends the ex-owner's walsender ({@link #endOtherWalsenders}) before it streams.
 *
 * <p>Thread-safe: acquired by the streaming thread, renewed by the lease thread, read by all.
 */
public final class SlotLease {

  private static final Logger log = LoggerFactory.getLogger(SlotLease.class);

  private static final String ENSURE =
      "INSERT INTO postbox_cdc_slot (slot_name) VALUES (?) ON CONFLICT (slot_name) DO NOTHING";
  private static final String ACQUIRE =
      "UPDATE postbox_cdc_slot SET owner = ?, epoch = epoch + 1,"
          + " lease_until = now() + make_interval(secs => ?), behind_since = coalesce(behind_since,"
          + " now()) WHERE slot_name = ? AND (owner IS NULL OR owner = ? OR lease_until <= now())"
          + " RETURNING epoch, republish_from_table";
  private static final String RENEW =
      "UPDATE postbox_cdc_slot SET lease_until = now() + make_interval(secs => ?),"
          + " behind_since = coalesce(?, now())"
          + " WHERE slot_name = ? AND owner = ? AND epoch = ?";
  private static final String RELEASE =
      "UPDATE postbox_cdc_slot SET owner = NULL, lease_until = '-infinity'"
          + " WHERE slot_name = ? AND owner = ? AND epoch = ?";
  private static final String FENCE =
      "SELECT 1 FROM postbox_cdc_slot WHERE slot_name = ? AND owner = ? AND epoch = ?";
  private static final String END_WALSENDERS =
      "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
          + " WHERE slot_name = ? AND active_pid IS NOT NULL";

  /** What an acquisition returned. */
  public record Acquired(long epoch, boolean republishFromTable) {}

  private final DataSource dataSource;
  private final String slot;
  private final String owner;
  private final Duration ttl;
  private final Ticker ticker;
  private volatile long epoch; // 0: not held
  private volatile long validUntilNanos;

  public SlotLease(DataSource dataSource, String slot, String owner, Duration ttl, Ticker ticker) {
    this.dataSource = dataSource;
    this.slot = slot;
    this.owner = owner;
    this.ttl = ttl;
    this.ticker = ticker;
  }

  /** Creates the slot's lease row if missing. */
  public void ensureRow() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ENSURE)) {
      ps.setString(1, slot);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException(
          "cannot write postbox_cdc_slot (run PostboxMigrations.migrate first)", e);
    }
  }

  /** The lease TTL. */
  public Duration ttl() {
    return ttl;
  }

  /** Takes the lease if free or expired (or already this owner's); empty while another holds it. */
  public java.util.Optional<Acquired> tryAcquire() {
    long started = ticker.nanos();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
      ps.setString(1, owner);
      ps.setDouble(2, seconds(ttl));
      ps.setString(3, slot);
      ps.setString(4, owner);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return java.util.Optional.empty();
        }
        long e = rs.getLong(1);
        validUntilNanos = started + ttl.toNanos() * 4 / 5;
        epoch = e;
        return java.util.Optional.of(new Acquired(e, rs.getBoolean(2)));
      }
    } catch (SQLException e) {
      throw new OutboxException("acquiring the lease on slot " + slot + " failed", e);
    }
  }

  /**
   * Renews the lease held under {@code e}, recording {@code behindSince} (null: caught up); false
   * (and the lease dropped locally) when a successor has taken it.
   */
  public boolean renew(long e, Instant behindSince) {
    long started = ticker.nanos();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RENEW)) {
      ps.setDouble(1, seconds(ttl));
      ps.setTimestamp(2, behindSince == null ? null : Timestamp.from(behindSince));
      ps.setString(3, slot);
      ps.setString(4, owner);
      ps.setLong(5, e);
      if (ps.executeUpdate() == 1) {
        if (epoch == e) {
          validUntilNanos = started + ttl.toNanos() * 4 / 5;
        }
        return true;
      }
    } catch (SQLException ex) {
      log.warn("CDC relay {}: renewing the lease on slot {} failed", owner, slot, ex);
      return holds(e); // may still be valid locally; the next renewal decides
    }
    lose(e, "a successor took it");
    return false;
  }

  /** Whether the lease under epoch {@code e} is held now, by this process's clock. */
  public boolean holds(long e) {
    return e != 0 && epoch == e && ticker.nanos() - validUntilNanos < 0;
  }

  /** The epoch held (0 when none; it may have expired locally: see {@link #holds}). */
  public long epoch() {
    return epoch;
  }

  /** Drops the lease locally (a successor took it, or it expired); logs once. */
  public void lose(long e, String why) {
    if (e != 0 && epoch == e) {
      epoch = 0;
      log.warn("CDC relay {}: lost the lease on slot {} (epoch {}): {}", owner, slot, e, why);
    }
  }

  /** Lets go of the lease (a clean stop) so a standby takes over at once. */
  public void release(long e) {
    if (e == 0) {
      return;
    }
    epoch = 0;
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RELEASE)) {
      ps.setString(1, slot);
      ps.setString(2, owner);
      ps.setLong(3, e);
      ps.executeUpdate();
    } catch (SQLException ex) {
      log.warn("CDC relay {}: releasing the lease on slot {} failed", owner, slot, ex);
    }
  }

  /**
   * In the caller's transaction: fails with {@link StaleLeaseException} unless the lease is still
   * this owner's under epoch {@code e}.
   */
  public void fence(Connection c, long e) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(FENCE)) {
      ps.setString(1, slot);
      ps.setString(2, owner);
      ps.setLong(3, e);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          lose(e, "its epoch moved on (fenced)");
          throw new StaleLeaseException(slot, e);
        }
      }
    }
  }

  /**
   * Ends the walsender that still streams the slot for an ex-owner (paused, or hung): after this
   * its connection is gone, so it can confirm nothing more. Needs the same role as the ex-owner or
   * {@code pg_signal_backend}.
   */
  public int endOtherWalsenders() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(END_WALSENDERS)) {
      ps.setString(1, slot);
      int n = 0;
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          n++;
        }
      }
      if (n > 0) {
        log.warn(
            "CDC relay {}: ended the walsender that still held slot {} for the previous owner",
            owner,
            slot);
      }
      return n;
    } catch (SQLException e) {
      log.warn("CDC relay {}: cannot end the previous owner's walsender on {}", owner, slot, e);
      return 0;
    }
  }

  private static double seconds(Duration d) {
    return d.toNanos() / 1e9;
  }

  /** A step of an ex-owner, refused because its epoch is no longer the slot's. */
  static final class StaleLeaseException extends OutboxException {
    private static final long serialVersionUID = 1L;

    StaleLeaseException(String slot, long epoch) {
      super("the lease on slot " + slot + " under epoch " + epoch + " is no longer held", null);
    }
  }
}
