package dev.postbox.jdbc.internal;

import dev.postbox.core.codec.StoredText;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.jdbc.OutboxException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** {@link ParkingStore} on PostgreSQL. */
public final class PostgresParkingStoreImpl implements ParkingStore {

  private static final String COLUMNS =
      "consumer, msg_key, topic, partition, \"offset\", key_bytes, value, header_names, header_values,"
          + " attempts, due_at, last_error";

  private static final String APPEND_IF_PARKED =
      "INSERT INTO postbox_parked ("
          + COLUMNS
          + ") SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, now(), NULL WHERE EXISTS"
          + " (SELECT 1 FROM postbox_parked WHERE consumer = ? AND msg_key = ?)";
  private static final String PARK =
      "INSERT INTO postbox_parked (" + COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  private static final String DUE_HEADS =
      "SELECT id FROM (SELECT DISTINCT ON (msg_key) id, due_at, leased_until FROM postbox_parked"
          + " WHERE consumer = ? ORDER BY msg_key, id) h"
          + " WHERE h.due_at <= ? AND (h.leased_until IS NULL OR h.leased_until < now())"
          + " ORDER BY h.due_at LIMIT ?";
  private static final String LEASE =
      "UPDATE postbox_parked SET leased_until = now() + make_interval(secs => ?)"
          + " WHERE id = ANY(?) AND (leased_until IS NULL OR leased_until < now()) RETURNING msg_key";
  private static final String SEQUENCE =
      "SELECT id, msg_key, topic, partition, \"offset\", key_bytes, value, header_names, header_values,"
          + " attempts, due_at FROM postbox_parked WHERE consumer = ? AND msg_key = ? ORDER BY id";
  private static final String RESCHEDULE =
      "UPDATE postbox_parked SET attempts = ?, due_at = ?, last_error = ?, leased_until = NULL"
          + " WHERE id = ?";
  private static final String RELEASE =
      "UPDATE postbox_parked SET leased_until = NULL WHERE consumer = ? AND msg_key = ?";

  private final DataSource dataSource;

  public PostgresParkingStoreImpl(DataSource dataSource) {
    this.dataSource = dataSource;
    Tables.require(dataSource, OutboxException::new, "postbox_parked");
  }

  @Override
  public boolean appendIfParked(String consumer, String key, ParkedRecord record) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(APPEND_IF_PARKED)) {
      int i = bindRecord(c, ps, 1, consumer, key, record);
      ps.setString(i++, StoredText.encode(consumer));
      ps.setString(i, StoredText.encode(key));
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      throw new OutboxException("appending to the parked sequence of " + key + " failed", e);
    }
  }

  @Override
  public void park(
      String consumer, String key, ParkedRecord record, int attempts, Instant dueAt, String error) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(PARK)) {
      int i = bindRecord(c, ps, 1, consumer, key, record);
      ps.setInt(i++, attempts);
      ps.setTimestamp(i++, Timestamp.from(dueAt));
      ps.setString(i, StoredText.encode(error));
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("parking a message of " + key + " failed", e);
    }
  }

  @Override
  public List<String> claimDue(String consumer, Instant now, Duration lease, int limit) {
    try (Connection c = dataSource.getConnection()) {
      List<Long> heads = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(DUE_HEADS)) {
        ps.setString(1, StoredText.encode(consumer));
        ps.setTimestamp(2, Timestamp.from(now));
        ps.setInt(3, limit);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            heads.add(rs.getLong(1));
          }
        }
      }
      if (heads.isEmpty()) {
        return List.of();
      }
      List<String> keys = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(LEASE)) {
        ps.setDouble(1, lease.toNanos() / 1e9);
        ps.setArray(2, c.createArrayOf("int8", heads.toArray()));
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            keys.add(StoredText.decode(rs.getString(1)));
          }
        }
      }
      return keys;
    } catch (SQLException e) {
      throw new OutboxException("claiming due parked keys failed", e);
    }
  }

  @Override
  public List<Parked> sequence(String consumer, String key) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(SEQUENCE)) {
      ps.setString(1, StoredText.encode(consumer));
      ps.setString(2, StoredText.encode(key));
      List<Parked> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String[] names = (String[]) rs.getArray("header_names").getArray();
          byte[][] values = (byte[][]) rs.getArray("header_values").getArray();
          List<DeadLetterStore.Header> headers = new ArrayList<>(names.length);
          for (int i = 0; i < names.length; i++) {
            headers.add(new DeadLetterStore.Header(StoredText.decode(names[i]), values[i]));
          }
          out.add(
              new Parked(
                  rs.getLong("id"),
                  StoredText.decode(rs.getString("msg_key")),
                  new ParkedRecord(
                      StoredText.decode(rs.getString("topic")),
                      rs.getInt("partition"),
                      rs.getLong("offset"),
                      rs.getBytes("key_bytes"),
                      rs.getBytes("value"),
                      List.copyOf(headers)),
                  rs.getInt("attempts"),
                  rs.getTimestamp("due_at").toInstant()));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new OutboxException("reading the parked sequence of " + key + " failed", e);
    }
  }

  @Override
  public void remove(long id) {
    update("DELETE FROM postbox_parked WHERE id = ?", ps -> ps.setLong(1, id));
  }

  @Override
  public void reschedule(
      String consumer, String key, long id, int attempts, Instant dueAt, String error) {
    update(
        RESCHEDULE,
        ps -> {
          ps.setInt(1, attempts);
          ps.setTimestamp(2, Timestamp.from(dueAt));
          ps.setString(3, StoredText.encode(error));
          ps.setLong(4, id);
        });
    release(consumer, key);
  }

  @Override
  public void release(String consumer, String key) {
    update(
        RELEASE,
        ps -> {
          ps.setString(1, StoredText.encode(consumer));
          ps.setString(2, StoredText.encode(key));
        });
  }

  @Override
  public long count(String consumer) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM postbox_parked WHERE consumer = ?")) {
      ps.setString(1, StoredText.encode(consumer));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new OutboxException("counting parked messages failed", e);
    }
  }

  private interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  private void update(String sql, Binder binder) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      binder.bind(ps);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException("parking store update failed", e);
    }
  }

  private static int bindRecord(
      Connection c, PreparedStatement ps, int first, String consumer, String key, ParkedRecord r)
      throws SQLException {
    int i = first;
    ps.setString(i++, StoredText.encode(consumer));
    ps.setString(i++, StoredText.encode(key));
    ps.setString(i++, StoredText.encode(r.topic()));
    ps.setInt(i++, r.partition());
    ps.setLong(i++, r.offset());
    ps.setBytes(i++, r.key());
    ps.setBytes(i++, r.value());
    String[] names = new String[r.headers().size()];
    byte[][] values = new byte[r.headers().size()][];
    for (int h = 0; h < names.length; h++) {
      names[h] = StoredText.encode(r.headers().get(h).name());
      values[h] = r.headers().get(h).value();
    }
    Array n = c.createArrayOf("text", names);
    Array v = c.createArrayOf("bytea", values);
    ps.setArray(i++, n);
    ps.setArray(i++, v);
    return i;
  }
}
