package dev.postbox.demo;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The demo's audit queries: what the database (outbox, lanes, dead letters, the inventory's
 * effects, the stock) and the broker (a group's lag) say about the run. Read-only.
 */
final class ShopAudit {

  private ShopAudit() {}

  static long unpublished(HikariDataSource ds, String topic) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM postbox_outbox"
                    + " WHERE topic = ? AND published_at IS NULL AND failed_at IS NULL")) {
      ps.setString(1, topic);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Records of {@code topic} beyond the group's committed offsets. */
  static long lag(Admin admin, String group, String topic) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    int partitions =
        admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int i = 0; i < partitions; i++) {
      latest.put(new TopicPartition(topic, i), OffsetSpec.latest());
    }
    long lag = 0;
    for (var end : admin.listOffsets(latest).all().get().entrySet()) {
      OffsetAndMetadata c = committed.get(end.getKey());
      lag += end.getValue().offset() - (c == null ? 0 : c.offset());
    }
    return lag;
  }

  /** The sum of the lanes' lease epochs: it grows by one each time a relay acquires a lane. */
  static long laneEpochs(HikariDataSource ds) throws Exception {
    return queryLong(ds, "SELECT coalesce(sum(epoch), 0) FROM postbox_relay_lane");
  }

  /** Distinct messages with a PENDING dead letter. */
  static long deadLettered(HikariDataSource ds) throws Exception {
    return queryLong(
        ds, "SELECT count(DISTINCT message_id) FROM postbox_dead_letter WHERE status = 'PENDING'");
  }

  /** One line per dead-lettered message: its key, why and how it was classified. */
  static List<String> deadLetterReasons(HikariDataSource ds) throws Exception {
    List<String> lines = new ArrayList<>();
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT DISTINCT ON (message_id) convert_from(msg_key, 'UTF8'), classification,"
                    + " regexp_replace(error_class, '.*[.$]', ''), error_message, status"
                    + " FROM postbox_dead_letter ORDER BY message_id, id")) {
      while (rs.next()) {
        String message = rs.getString(4) == null ? "" : rs.getString(4);
        if (message.length() > 90) {
          message = message.substring(0, 90) + "...";
        }
        lines.add(
            String.format(
                "  %-18s %-9s %s: %s", rs.getString(1), rs.getString(2), rs.getString(3), message));
      }
    }
    lines.sort(null);
    return lines;
  }

  /** How many of {@code ids} have exactly one effect. */
  static long appliedOnce(HikariDataSource ds, List<UUID> ids) throws Exception {
    return countOf(
        ds,
        "SELECT count(*) FROM (SELECT message_id FROM inventory_effects"
            + " WHERE message_id = ANY (?) GROUP BY message_id HAVING count(*) = 1) x",
        ids);
  }

  /** Runs a {@code count(*)} query whose one parameter is the uuid array {@code ids}. */
  static long countOf(HikariDataSource ds, String sql, java.util.Collection<UUID> ids)
      throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** How many of {@code ids} have an effect. */
  static long applied(HikariDataSource ds, Set<UUID> ids) throws Exception {
    return countOf(
        ds,
        "SELECT count(DISTINCT message_id) FROM inventory_effects WHERE message_id = ANY (?)",
        ids);
  }

  /**
   * Per-key order of the inventory's effects for {@code keys}: effects (in the order they were
   * written, {@code inventory_effects.id}) whose order has a lower seq than an effect of its key
   * written before it.
   */
  static long parkedOrderViolations(HikariDataSource ds, Set<String> keys) throws Exception {
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM (SELECT o.seq, max(o.seq) OVER (PARTITION BY o.customer_id"
                    + " ORDER BY e.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before"
                    + " FROM inventory_effects e JOIN orders o ON o.id = e.order_id"
                    + " WHERE o.customer_id = ANY (?)) x WHERE seq < before")) {
      ps.setArray(1, c.createArrayOf("text", keys.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** The inventory's outcome, read from the database (the source of truth), after it stopped. */
  record InventoryFigures(
      long duplicatesDelivered,
      long duplicatesSuppressed,
      long effectsApplied,
      long duplicateEffects,
      long stockExpected,
      long stockActual) {}

  static InventoryFigures inventoryFigures(HikariDataSource ds) throws Exception {
    long effectRows = queryLong(ds, "SELECT count(*) FROM inventory_effects");
    long effects = queryLong(ds, "SELECT count(DISTINCT message_id) FROM inventory_effects");
    return new InventoryFigures(
        // every finished delivery left one row: an effect, or a suppressed duplicate
        queryLong(
            ds,
            "SELECT count(*) - count(DISTINCT message_id) FROM (SELECT message_id FROM"
                + " inventory_effects UNION ALL SELECT message_id FROM inventory_suppressed) d"),
        queryLong(ds, "SELECT count(*) FROM inventory_suppressed"),
        effects,
        effectRows - effects,
        queryLong(
            ds,
            "SELECT (SELECT sum(initial_stock) FROM products)"
                + " - (SELECT coalesce(sum(quantity), 0) FROM orders)"),
        queryLong(ds, "SELECT sum(stock) FROM products"));
  }

  static long queryLong(HikariDataSource ds, String sql) throws Exception {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
