package dev.postbox.jdbc.internal;

import static dev.postbox.jdbc.internal.RelayBinds.seconds;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import javax.sql.DataSource;

/**
 * The relay instances and their lane leases on PostgreSQL ({@code postbox_relay_instance}, {@code
 * postbox_relay_lane}): heartbeat and live count, renew, acquire with a new epoch, release,
 * unregister. Thread-safe (stateless over the data source).
 */
final class PostgresLaneLeases {

  // A row that another relay forgot (this one was stopped longer than the TTL) comes back with the
  // idle mark this relay last wrote, not the column default (idle): a relay that was draining when
  // it stopped would otherwise read as idle, and every insert would notify until it went idle and
  // busy again.
  private static final String HEARTBEAT =
      "INSERT INTO postbox_relay_instance (instance_id, seen_at, idle) VALUES (?, now(), ?)"
          + " ON CONFLICT (instance_id) DO UPDATE SET seen_at = now()";
  // A dead instance's row may be locked by a transaction its process left open when it was paused
  // (a heartbeat or an idle mark): skip it rather than wait for that process, and count only the
  // instances seen within the TTL, so a paused one neither blocks nor shrinks the fair share.
  private static final String FORGET_DEAD =
      "DELETE FROM postbox_relay_instance WHERE instance_id IN (SELECT instance_id"
          + " FROM postbox_relay_instance WHERE seen_at < now() - make_interval(secs => ?)"
          + " FOR UPDATE SKIP LOCKED)";
  private static final String COUNT_LIVE =
      "SELECT count(*) FROM postbox_relay_instance"
          + " WHERE seen_at >= now() - make_interval(secs => ?)";
  private static final String RENEW =
      "UPDATE postbox_relay_lane SET lease_until = now() + make_interval(secs => ?)"
          + " WHERE owner = ? RETURNING lane, epoch";
  private static final String ACQUIRE =
      "UPDATE postbox_relay_lane l SET owner = ?, epoch = l.epoch + 1,"
          + " lease_until = now() + make_interval(secs => ?)"
          + " WHERE l.lane IN (SELECT lane FROM postbox_relay_lane"
          + "   WHERE owner IS NULL OR lease_until <= now() ORDER BY lane LIMIT ? FOR UPDATE SKIP LOCKED)"
          + " RETURNING l.lane, l.epoch";
  private static final String RELEASE =
      "UPDATE postbox_relay_lane l SET owner = NULL, lease_until = '-infinity'"
          + " FROM unnest(?::smallint[], ?::bigint[]) AS mine(lane, epoch)"
          + " WHERE l.lane = mine.lane AND l.epoch = mine.epoch AND l.owner = ?";
  private static final String RELEASE_ALL =
      "UPDATE postbox_relay_lane SET owner = NULL, lease_until = '-infinity' WHERE owner = ?";
  private static final String UNREGISTER =
      "DELETE FROM postbox_relay_instance WHERE instance_id = ?";

  private final DataSource dataSource;

  PostgresLaneLeases(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /**
   * Registers (or refreshes) the instance, with {@code idle} as its idle mark if its row is new,
   * forgets instances not seen within the TTL, and returns how many are live (at least 1).
   */
  int heartbeat(String instanceId, Duration ttl, boolean idle) {
    return Transactions.inTransaction(
        dataSource,
        "relay heartbeat failed",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(HEARTBEAT)) {
            ps.setString(1, instanceId);
            ps.setBoolean(2, idle);
            ps.executeUpdate();
          }
          try (PreparedStatement ps = c.prepareStatement(FORGET_DEAD)) {
            ps.setDouble(1, seconds(ttl));
            ps.executeUpdate();
          }
          try (PreparedStatement ps = c.prepareStatement(COUNT_LIVE)) {
            ps.setDouble(1, seconds(ttl));
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return Math.max(1, rs.getInt(1));
            }
          }
        },
        OutboxException::new);
  }

  List<LaneLease> renew(String instanceId, Duration ttl) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RENEW)) {
      ps.setDouble(1, seconds(ttl));
      ps.setString(2, instanceId);
      return RelayBinds.leases(ps.executeQuery());
    } catch (SQLException e) {
      throw new OutboxException("renewing lane leases failed", e);
    }
  }

  List<LaneLease> acquire(String instanceId, int max, Duration ttl) {
    if (max <= 0) {
      return List.of();
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
      ps.setString(1, instanceId);
      ps.setDouble(2, seconds(ttl));
      ps.setInt(3, max);
      return RelayBinds.leases(ps.executeQuery());
    } catch (SQLException e) {
      throw new OutboxException("acquiring lane leases failed", e);
    }
  }

  void release(String instanceId, Collection<LaneLease> leases) {
    if (leases.isEmpty()) {
      return;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RELEASE)) {
      RelayBinds.leases(c, ps, 1, leases);
      ps.setString(3, instanceId);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("releasing lane leases failed", e);
    }
  }

  /** Releases every lane of the instance and deletes its row. */
  void unregister(String instanceId) {
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement ps = c.prepareStatement(RELEASE_ALL)) {
        ps.setString(1, instanceId);
        ps.executeUpdate();
      }
      try (PreparedStatement ps = c.prepareStatement(UNREGISTER)) {
        ps.setString(1, instanceId);
        ps.executeUpdate();
      }
    } catch (SQLException e) {
      throw new OutboxException("unregistering relay " + instanceId + " failed", e);
    }
  }
}
