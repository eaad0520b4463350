package dev.postbox.jdbc.internal;

import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.jdbc.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The oldest unfinished message of each queue of a subscription, per instance, on PostgreSQL
 * ({@code postbox_consumer_age}): a report replaces the instance's rows in one transaction and
 * deletes the subscription's rows older than {@link ConsumerAgeStore#RETENTION}; a read takes the
 * earliest time per queue over the rows within the staleness bound. Times are the callers'.
 * Thread-safe (stateless over the data source).
 */
public final class PostgresConsumerAges implements ConsumerAgeStore {

  private static final String DROP_OTHERS =
      "DELETE FROM postbox_consumer_age WHERE consumer = ? AND instance = ?"
          + " AND queue <> ALL (?::text[])";
  private static final String UPSERT =
      "INSERT INTO postbox_consumer_age (consumer, queue, instance, oldest_unfinished, reported_at)"
          + " SELECT ?, u.q, ?, u.o, ? FROM unnest(?::text[], ?::timestamptz[]) AS u(q, o)"
          + " ON CONFLICT (consumer, queue, instance) DO UPDATE"
          + " SET oldest_unfinished = EXCLUDED.oldest_unfinished,"
          + " reported_at = EXCLUDED.reported_at";
  // another instance's old row may be locked by a report it left open: skip it rather than wait
  private static final String PRUNE =
      "DELETE FROM postbox_consumer_age WHERE (consumer, queue, instance) IN"
          + " (SELECT consumer, queue, instance FROM postbox_consumer_age WHERE consumer = ?"
          + " AND reported_at < ? FOR UPDATE SKIP LOCKED)";
  private static final String FORGET =
      "DELETE FROM postbox_consumer_age WHERE consumer = ? AND instance = ?";
  private static final String READ =
      "SELECT queue, min(oldest_unfinished) FROM postbox_consumer_age"
          + " WHERE consumer = ? AND reported_at >= ? GROUP BY queue ORDER BY queue";

  private final DataSource dataSource;

  /** A store on {@code dataSource}; fails unless its table exists. */
  public PostgresConsumerAges(DataSource dataSource) {
    this.dataSource = dataSource;
    Tables.require(dataSource, OutboxException::new, "postbox_consumer_age");
  }

  @Override
  public void report(
      String subscription,
      String instance,
      Map<String, Optional<Instant>> oldestUnfinished,
      Instant now) {
    Objects.requireNonNull(subscription, "subscription");
    Objects.requireNonNull(instance, "instance");
    Objects.requireNonNull(now, "now");
    String[] queues = new String[oldestUnfinished.size()];
    Timestamp[] oldest = new Timestamp[queues.length];
    int i = 0;
    for (Map.Entry<String, Optional<Instant>> e : oldestUnfinished.entrySet()) {
      queues[i] = Objects.requireNonNull(e.getKey(), "queue");
      oldest[i++] = e.getValue().map(Timestamp::from).orElse(null);
    }
    Transactions.inTransaction(
        dataSource,
        "reporting the unfinished ages of " + instance + " in " + subscription + " failed",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(DROP_OTHERS)) {
            ps.setString(1, subscription);
            ps.setString(2, instance);
            ps.setArray(3, c.createArrayOf("text", queues));
            ps.executeUpdate();
          }
          if (queues.length > 0) {
            try (PreparedStatement ps = c.prepareStatement(UPSERT)) {
              ps.setString(1, subscription);
              ps.setString(2, instance);
              ps.setTimestamp(3, Timestamp.from(now));
              ps.setArray(4, c.createArrayOf("text", queues));
              ps.setArray(5, c.createArrayOf("timestamptz", oldest));
              ps.executeUpdate();
            }
          }
          try (PreparedStatement ps = c.prepareStatement(PRUNE)) {
            ps.setString(1, subscription);
            ps.setTimestamp(2, Timestamp.from(now.minus(RETENTION)));
            ps.executeUpdate();
          }
          return null;
        },
        OutboxException::new);
  }

  @Override
  public void forget(String subscription, String instance) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(FORGET)) {
      ps.setString(1, subscription);
      ps.setString(2, instance);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new OutboxException(
          "forgetting the unfinished ages of " + instance + " in " + subscription + " failed", e);
    }
  }

  @Override
  public Map<String, Optional<Instant>> read(
      String subscription, Instant now, Duration staleAfter) {
    Map<String, Optional<Instant>> out = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(READ)) {
      ps.setString(1, subscription);
      ps.setTimestamp(2, Timestamp.from(now.minus(staleAfter)));
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Timestamp t = rs.getTimestamp(2);
          out.put(rs.getString(1), Optional.ofNullable(t).map(Timestamp::toInstant));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new OutboxException("reading the unfinished ages of " + subscription + " failed", e);
    }
  }
}
