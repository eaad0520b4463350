package dev.postbox.spec;

import dev.postbox.core.consumer.Delivery;
import dev.postbox.jdbc.PostboxMigrations;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * The spec's observable outcome: an effect table with <b>no</b> unique constraint on the message id
 * (a duplicate effect stays visible), written in the inbox transaction for {@code EFFECTIVELY_ONCE}
 * and in its own auto-commit for the other guarantees; and every handler call with its attempt
 * number, kept in memory.
 */
final class Effects {

  private final DataSource ds;
  private final Map<UUID, List<Integer>> calls = new ConcurrentHashMap<>();

  Effects(DataSource ds) throws SQLException {
    this.ds = ds;
    PostboxMigrations.migrate(ds);
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
              + " message_id uuid NOT NULL, msg_key text, seq bigint)");
    }
  }

  /** Records a handler call (before it does anything else). */
  void called(Delivery d) {
    calls.computeIfAbsent(d.message().id(), k -> new CopyOnWriteArrayList<>()).add(d.attempt());
  }

  /** The attempt numbers of every call for message {@code id}, in call order. */
  List<Integer> calls(UUID id) {
    return List.copyOf(calls.getOrDefault(id, List.of()));
  }

  /** Applies the effect of {@code d}: on the inbox transaction if there is one, else on its own. */
  void apply(String consumer, Delivery d) throws SQLException {
    if (d.connection().isPresent()) {
      insert(d.connection().get(), consumer, d);
    } else {
      try (Connection c = ds.getConnection()) {
        insert(c, consumer, d);
      }
    }
  }

  private static void insert(Connection c, String consumer, Delivery d) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO effect (consumer, message_id, msg_key, seq) VALUES (?, ?, ?, ?)")) {
      ps.setString(1, consumer);
      ps.setObject(2, d.message().id());
      ps.setString(3, d.message().key().orElse(null));
      ps.setLong(4, Long.parseLong(d.message().header("seq").orElseThrow()));
      ps.executeUpdate();
    }
  }

  /** Effects of {@code consumer}, duplicates included. */
  long count(String consumer) throws SQLException {
    return number("SELECT count(*) FROM effect WHERE consumer = ?", consumer);
  }

  /** Distinct messages with an effect of {@code consumer}. */
  long distinct(String consumer) throws SQLException {
    return number("SELECT count(DISTINCT message_id) FROM effect WHERE consumer = ?", consumer);
  }

  /** Effects of {@code consumer} for message {@code id}. */
  long of(String consumer, UUID id) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM effect WHERE consumer = ? AND message_id = ?")) {
      ps.setString(1, consumer);
      ps.setObject(2, id);
      return single(ps);
    }
  }

  /** Message ids of every effect of {@code consumer}, duplicates included. */
  List<UUID> ids(String consumer) throws SQLException {
    List<UUID> out = new ArrayList<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT message_id FROM effect WHERE consumer = ? ORDER BY n")) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getObject(1, UUID.class));
        }
      }
    }
    return out;
  }

  /** Per key, the sequence numbers of {@code consumer}'s effects in the order they were applied. */
  Map<String, List<Long>> sequencesByKey(String consumer) throws SQLException {
    Map<String, List<Long>> out = new LinkedHashMap<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT msg_key, seq FROM effect WHERE consumer = ? ORDER BY n")) {
      ps.setString(1, consumer);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getLong(2));
        }
      }
    }
    return out;
  }

  /** Outbox rows not yet published. */
  long unpublished() throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL")) {
      return single(ps);
    }
  }

  private long number(String sql, String consumer) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, consumer);
      return single(ps);
    }
  }

  private static long single(PreparedStatement ps) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
