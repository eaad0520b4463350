package dev.postbox.jdbc.internal;

import static dev.postbox.jdbc.internal.RelayBinds.seconds;

import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.sql.DataSource;

/**
 * Shard leases of consumer groups on PostgreSQL ({@code postbox_shard_member}, {@code
 * postbox_shard_lease}): heartbeat with renewal and the group's view in one transaction, acquire
 * (free or expired rows, created on first use), release, unregister. Thread-safe (stateless over
 * the data source).
 */
public final class PostgresShardLeases implements ShardLeaseStore {

  private static final String SEEN =
      "INSERT INTO postbox_shard_member (consumer, member, seen_at) VALUES (?, ?, now())"
          + " ON CONFLICT (consumer, member) DO UPDATE SET seen_at = now()";
  // a paused member's row may be locked by a transaction it left open: skip it rather than wait
  private static final String FORGET_DEAD =
      "DELETE FROM postbox_shard_member WHERE (consumer, member) IN (SELECT consumer, member"
          + " FROM postbox_shard_member WHERE consumer = ?"
          + " AND seen_at < now() - make_interval(secs => ?) FOR UPDATE SKIP LOCKED)";
  private static final String RENEW =
      "UPDATE postbox_shard_lease SET lease_until = now() + make_interval(secs => ?)"
          + " WHERE consumer = ? AND owner = ?";
  private static final String MEMBERS =
      "SELECT member FROM postbox_shard_member WHERE consumer = ?"
          + " AND seen_at >= now() - make_interval(secs => ?) ORDER BY member";
  private static final String HOLDERS =
      "SELECT shard, owner FROM postbox_shard_lease WHERE consumer = ? AND owner IS NOT NULL"
          + " AND lease_until > now()";
  // ON CONFLICT DO UPDATE locks a contended row and re-checks the WHERE on its newest version, so
  // of two members taking one shard at once exactly one gets it
  private static final String ACQUIRE =
      "INSERT INTO postbox_shard_lease AS l (consumer, shard, owner, lease_until)"
          + " SELECT ?, s, ?, now() + make_interval(secs => ?) FROM unnest(?::integer[]) AS s"
          + " ON CONFLICT (consumer, shard) DO UPDATE SET owner = EXCLUDED.owner,"
          + " lease_until = EXCLUDED.lease_until"
          + " WHERE l.owner IS NULL OR l.lease_until <= now() OR l.owner = EXCLUDED.owner"
          + " RETURNING shard";
  private static final String RELEASE =
      "UPDATE postbox_shard_lease SET owner = NULL, lease_until = '-infinity'"
          + " WHERE consumer = ? AND owner = ? AND shard = ANY (?::integer[])";
  private static final String RELEASE_ALL =
      "UPDATE postbox_shard_lease SET owner = NULL, lease_until = '-infinity'"
          + " WHERE consumer = ? AND owner = ?";
  private static final String UNREGISTER =
      "DELETE FROM postbox_shard_member WHERE consumer = ? AND member = ?";

  private final DataSource dataSource;

  /** A store on {@code dataSource}; fails unless its tables exist. */
  public PostgresShardLeases(DataSource dataSource) {
    this.dataSource = dataSource;
    Tables.require(dataSource, OutboxException::new, "postbox_shard_member", "postbox_shard_lease");
  }

  @Override
  public Group heartbeat(String group, String member, Duration ttl) {
    return Transactions.inTransaction(
        dataSource,
        "shard heartbeat of " + member + " in " + group + " failed",
        c -> {
          update(c, SEEN, group, member);
          try (PreparedStatement ps = c.prepareStatement(FORGET_DEAD)) {
            ps.setString(1, group);
            ps.setDouble(2, seconds(ttl));
            ps.executeUpdate();
          }
          try (PreparedStatement ps = c.prepareStatement(RENEW)) {
            ps.setDouble(1, seconds(ttl));
            ps.setString(2, group);
            ps.setString(3, member);
            ps.executeUpdate();
          }
          List<String> members = new ArrayList<>();
          try (PreparedStatement ps = c.prepareStatement(MEMBERS)) {
            ps.setString(1, group);
            ps.setDouble(2, seconds(ttl));
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                members.add(rs.getString(1));
              }
            }
          }
          Map<Integer, String> holders = new HashMap<>();
          try (PreparedStatement ps = c.prepareStatement(HOLDERS)) {
            ps.setString(1, group);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                holders.put(rs.getInt(1), rs.getString(2));
              }
            }
          }
          return new Group(members, holders);
        },
        OutboxException::new);
  }

  @Override
  public Set<Integer> acquire(
      String group, String member, Collection<Integer> shards, Duration ttl) {
    Set<Integer> taken = new TreeSet<>();
    if (shards.isEmpty()) {
      return taken;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.setDouble(3, seconds(ttl));
      ps.setArray(4, c.createArrayOf("integer", shards.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          taken.add(rs.getInt(1));
        }
      }
      return taken;
    } catch (SQLException e) {
      throw new OutboxException("taking shards " + shards + " of " + group + " failed", e);
    }
  }

  @Override
  public void release(String group, String member, Collection<Integer> shards) {
    if (shards.isEmpty()) {
      return;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(RELEASE)) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.setArray(3, c.createArrayOf("integer", shards.toArray()));
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("releasing shards " + shards + " of " + group + " failed", e);
    }
  }

  @Override
  public void unregister(String group, String member) {
    Transactions.inTransaction(
        dataSource,
        "unregistering " + member + " from " + group + " failed",
        c -> {
          update(c, RELEASE_ALL, group, member);
          update(c, UNREGISTER, group, member);
          return null;
        },
        OutboxException::new);
  }

  private static void update(Connection c, String sql, String group, String member)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, group);
      ps.setString(2, member);
      ps.executeUpdate();
    }
  }
}
