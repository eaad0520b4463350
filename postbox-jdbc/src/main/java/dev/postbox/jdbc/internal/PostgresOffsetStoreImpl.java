package dev.postbox.jdbc.internal;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import dev.postbox.jdbc.InboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import java.util.OptionalLong;
import javax.sql.DataSource;

/** {@link OffsetStore} on PostgreSQL ({@code postbox_consumer_offset}). */
public final class PostgresOffsetStoreImpl implements OffsetStore {

  private static final String READ =
      "SELECT next_offset FROM postbox_consumer_offset"
          + " WHERE consumer_group = ? AND topic = ? AND partition = ?";
  private static final String ENSURE =
      "INSERT INTO postbox_consumer_offset (consumer_group, topic, partition, next_offset)"
          + " VALUES (?, ?, ?, 0) ON CONFLICT DO NOTHING";
  // the row stays locked until the transaction ends: applies of one partition serialise on it
  private static final String ADVANCE =
      "UPDATE postbox_consumer_offset SET next_offset = ?, updated_at = now()"
          + " WHERE consumer_group = ? AND topic = ? AND partition = ? AND next_offset <= ?";

  private final DataSource dataSource;
  private final PostgresInboxStoreImpl versions;

  public PostgresOffsetStoreImpl(DataSource dataSource) {
    this.dataSource = dataSource;
    Tables.require(dataSource, InboxException::new, "postbox_consumer_offset");
    this.versions = new PostgresInboxStoreImpl(dataSource);
  }

  @Override
  public OptionalLong nextOffset(String group, String topic, int partition) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(READ)) {
      bind(ps, 1, group, topic, partition);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
      }
    } catch (SQLException e) {
      throw new InboxException(
          "reading the next offset of '" + group + "' on " + topic + "-" + partition + " failed",
          e);
    }
  }

  @Override
  public boolean applyAt(
      String group, String topic, int partition, long offset, InboxStore.Work work)
      throws Exception {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(work, "work");
    String what = topic + "-" + partition + "@" + offset + " of consumer group '" + group + "'";
    return Transactions.forCallerOnNewConnection(
        dataSource,
        what,
        "if the commit did happen anyway, a redelivery is skipped by its offset",
        conn -> {
          if (!advance(conn, group, topic, partition, offset, what)) {
            return new Transactions.Step<>(false, false); // applied before
          }
          work.run(conn); // throws: the advance rolls back with the effect
          return new Transactions.Step<>(true, true);
        },
        InboxException::new);
  }

  /**
   * Moves the partition's next offset past {@code offset} if it is not past it yet, locking the row
   * until the transaction ends (applies of one partition serialise on it; a concurrent apply of the
   * same offset waits, then sees the advance and skips). One statement per message where the lock,
   * the check and the store were three; false when the offset was applied before.
   */
  private static boolean advance(
      Connection c, String group, String topic, int partition, long offset, String what) {
    try {
      if (update(c, group, topic, partition, offset) == 1) {
        return true;
      }
      // not advanced: applied before, or the partition's first apply (no row yet): make the row
      // (a concurrent first insert waits here) and try once more
      try (PreparedStatement ps = c.prepareStatement(ENSURE)) {
        bind(ps, 1, group, topic, partition);
        ps.executeUpdate();
      }
      return update(c, group, topic, partition, offset) == 1;
    } catch (SQLException e) {
      throw new InboxException("advancing the next offset of " + what + " failed", e);
    }
  }

  private static int update(Connection c, String group, String topic, int partition, long offset)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(ADVANCE)) {
      ps.setLong(1, offset + 1);
      bind(ps, 2, group, topic, partition);
      ps.setLong(5, offset);
      return ps.executeUpdate();
    }
  }

  private static void bind(PreparedStatement ps, int from, String group, String topic, int p)
      throws SQLException {
    ps.setString(from, group);
    ps.setString(from + 1, topic);
    ps.setInt(from + 2, p);
  }

  @Override
  public boolean advanceVersion(Connection connection, String entity, long version) {
    return versions.advanceVersion(connection, entity, version);
  }
}
