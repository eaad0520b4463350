package dev.postbox.verify;

import dev.postbox.verify.TopicReader.Published;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Checks the history of a campaign: the producer's committed business transactions ({@code
 * verify_business}) and rolled-back ones ({@code verify_rolled_back}), the topic as read by a
 * {@link TopicReader}, the consumers' effect rows ({@code verify_effect}) and assignments ({@code
 * verify_assignment}), the dead letters, and the consumer group's committed offsets.
 *
 * <p>Thread-safe.
 */
final class HistoryChecker {

  /** What one check of one phase found. */
  record Findings(
      long messages,
      long rolledBack,
      long lost,
      long deadLettered,
      long duplicateEffects,
      long topicRecords,
      long topicDuplicates,
      long staleRepublishes,
      long orderViolations,
      long zombieApplies,
      long rolledBackPublished,
      long rolledBackApplied,
      long offsetViolations,
      long offsetSamples,
      long offsetRecordsChecked) {

    long violations() {
      return lost
          + duplicateEffects
          + orderViolations
          + zombieApplies
          + rolledBackPublished
          + rolledBackApplied
          + offsetViolations;
    }
  }

  private final DataSource ds;
  private final Admin admin;
  private final TopicReader reader;
  private final String topic;
  private final int partitions;
  private final String group;
  private final FaultLog log;
  private final Map<Integer, Long> audited = new HashMap<>();
  private long offsetViolations;
  private long offsetSamples;
  private long offsetRecordsChecked;
  private long reportedOffsetSamples;
  private long reportedOffsetRecordsChecked;
  private long reportedOffsetViolations;
  private long reportedPhantomPublished;
  private long reportedPhantomApplied;

  HistoryChecker(
      DataSource ds,
      Admin admin,
      TopicReader reader,
      String topic,
      int partitions,
      String group,
      FaultLog log) {
    this.ds = ds;
    this.admin = admin;
    this.reader = reader;
    this.topic = topic;
    this.partitions = partitions;
    this.group = group;
    this.log = log;
  }

  /** The group's committed offsets (partition -> next offset), empty for none. */
  Map<Integer, Long> committedOffsets() throws Exception {
    Map<TopicPartition, OffsetAndMetadata> m =
        admin
            .listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata()
            .get(10, TimeUnit.SECONDS);
    Map<Integer, Long> out = new HashMap<>();
    m.forEach((tp, o) -> {
      if (o != null && tp.topic().equals(topic)) {
        out.put(tp.partition(), o.offset());
      }
    });
    return out;
  }

  /** The partitions' end offsets. */
  Map<Integer, Long> endOffsets() throws Exception {
    Map<TopicPartition, OffsetSpec> q = new HashMap<>();
    for (int i = 0; i < partitions; i++) {
      q.put(new TopicPartition(topic, i), OffsetSpec.latest());
    }
    Map<Integer, Long> out = new HashMap<>();
    admin
        .listOffsets(q)
        .all()
        .get(10, TimeUnit.SECONDS)
        .forEach((tp, info) -> out.put(tp.partition(), info.offset()));
    return out;
  }

  /**
   * Samples the committed offsets and checks that every record below them has its effect (or a dead
   * letter): a committed offset must never pass an unfinished record. Checks each record once.
   * Returns false if the sample could not be taken (broker or database down).
   */
  synchronized boolean auditOffsets() {
    try {
      Map<Integer, Long> committed = committedOffsets();
      if (!reader.awaitPositions(committed, Duration.ofSeconds(10))) {
        return false;
      }
      List<Published> toCheck = new ArrayList<>();
      Map<Integer, Long> upTo = new HashMap<>();
      committed.forEach((p, c) -> {
        long from = audited.getOrDefault(p, 0L);
        if (c > from) {
          toCheck.addAll(reader.range(p, from, c));
          upTo.put(p, c);
        }
      });
      Set<UUID> ids = new HashSet<>();
      for (Published r : toCheck) {
        if (r.id() != null) {
          ids.add(r.id());
        }
      }
      Set<UUID> done = finished(ids);
      for (Published r : toCheck) {
        if (r.id() == null || !done.contains(r.id())) {
          offsetViolations++;
          log.note(
              "offset-violation",
              "partition "
                  + r.partition()
                  + " committed past offset "
                  + r.offset()
                  + " (message "
                  + r.id()
                  + ") which has no effect");
        }
      }
      audited.putAll(upTo);
      offsetSamples++;
      offsetRecordsChecked += toCheck.size();
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  /** Ids among {@code ids} that have an effect or a dead letter. */
  private Set<UUID> finished(Set<UUID> ids) throws SQLException {
    Set<UUID> done = new HashSet<>();
    if (ids.isEmpty()) {
      return done;
    }
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id FROM verify_effect WHERE message_id = ANY (?)"
                    + " UNION SELECT message_id FROM postbox_dead_letter WHERE message_id = ANY (?)")) {
      Array a = c.createArrayOf("uuid", ids.toArray());
      ps.setArray(1, a);
      ps.setArray(2, a);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          done.add(rs.getObject(1, UUID.class));
        }
      }
    }
    return done;
  }

  /**
   * Whether everything is through: no unpublished outbox row, every committed business transaction
   * applied (or dead-lettered), and the group's committed offsets at the end of every partition.
   */
  boolean drained() {
    try (Connection c = ds.getConnection()) {
      if (count(
              c,
              "SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL AND failed_at IS NULL")
          > 0) {
        return false;
      }
      if (count(
              c,
              "SELECT count(*) FROM verify_business b WHERE NOT EXISTS (SELECT 1 FROM verify_effect"
                  + " e WHERE e.message_id = b.message_id) AND NOT EXISTS (SELECT 1 FROM"
                  + " postbox_dead_letter d WHERE d.message_id = b.message_id)")
          > 0) {
        return false;
      }
      Map<Integer, Long> ends = endOffsets();
      Map<Integer, Long> committed = committedOffsets();
      for (Map.Entry<Integer, Long> e : ends.entrySet()) {
        if (e.getValue() > 0 && committed.getOrDefault(e.getKey(), 0L) < e.getValue()) {
          return false;
        }
      }
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  /** Business transactions committed in {@code phase} so far; 0 while the database is down. */
  long committedIn(int phase) {
    try (Connection c = ds.getConnection()) {
      return count(c, "SELECT count(*) FROM verify_business WHERE phase = " + phase);
    } catch (Exception e) {
      return 0;
    }
  }

  /** Checks the whole history; counts what belongs to {@code phase}. */
  synchronized Findings check(int phase) throws Exception {
    auditOffsets();
    try (Connection c = ds.getConnection()) {
      long messages = count(c, "SELECT count(*) FROM verify_business WHERE phase = " + phase);
      long rolledBack = count(c, "SELECT count(*) FROM verify_rolled_back WHERE phase = " + phase);
      long lost =
          count(
              c,
              "SELECT count(*) FROM verify_business b WHERE phase = "
                  + phase
                  + " AND NOT EXISTS (SELECT 1 FROM verify_effect e WHERE e.message_id ="
                  + " b.message_id) AND NOT EXISTS (SELECT 1 FROM postbox_dead_letter d WHERE"
                  + " d.message_id = b.message_id)");
      long deadLettered =
          count(
              c,
              "SELECT count(*) FROM verify_business b WHERE phase = "
                  + phase
                  + " AND NOT EXISTS (SELECT 1 FROM verify_effect e WHERE e.message_id ="
                  + " b.message_id) AND EXISTS (SELECT 1 FROM postbox_dead_letter d WHERE"
                  + " d.message_id = b.message_id)");
      long duplicateEffects =
          count(
              c,
              "SELECT coalesce(sum(n - 1), 0) FROM (SELECT e.message_id, count(*) AS n FROM"
                  + " verify_effect e JOIN verify_business b ON b.message_id = e.message_id WHERE"
                  + " b.phase = "
                  + phase
                  + " GROUP BY e.message_id) x");
      long zombieApplies = count(c, zombieSql(phase));
      long phantomApplied =
          count(
              c,
              "SELECT count(*) FROM verify_effect e WHERE NOT EXISTS (SELECT 1 FROM"
                  + " verify_business b WHERE b.message_id = e.message_id)");
      long orderViolations = orderViolations(c, phase);
      Map<UUID, Integer> phases = phases(c);
      long topicRecords = 0;
      long phantomPublished = 0;
      long staleRepublishes = 0;
      Set<UUID> distinct = new HashSet<>();
      for (List<Published> records : reader.all().values()) {
        Map<String, Long> maxSeq = new HashMap<>();
        for (Published r : records) {
          Integer p = r.id() == null ? null : phases.get(r.id());
          if (p == null) {
            phantomPublished++;
            continue;
          }
          long max = maxSeq.getOrDefault(r.key(), 0L);
          if (p == phase) {
            topicRecords++;
            distinct.add(r.id());
            if (r.seq() < max) {
              staleRepublishes++;
            }
          }
          maxSeq.put(r.key(), Math.max(max, r.seq()));
        }
      }
      Findings f =
          new Findings(
              messages,
              rolledBack,
              lost,
              deadLettered,
              duplicateEffects,
              topicRecords,
              topicRecords - distinct.size(),
              staleRepublishes,
              orderViolations,
              zombieApplies,
              phantomPublished - reportedPhantomPublished,
              phantomApplied - reportedPhantomApplied,
              offsetViolations - reportedOffsetViolations,
              offsetSamples - reportedOffsetSamples,
              offsetRecordsChecked - reportedOffsetRecordsChecked);
      reportedOffsetSamples = offsetSamples;
      reportedOffsetRecordsChecked = offsetRecordsChecked;
      reportedPhantomPublished = phantomPublished;
      reportedPhantomApplied = phantomApplied;
      reportedOffsetViolations = offsetViolations;
      return f;
    }
  }

  /**
   * Effects of {@code phase} applied by a process on a partition after another process had been
   * assigned that partition in a later generation than this process's own latest assignment of it
   * (recorded before the effect committed). Generations, not clock times, order assignments: a
   * process resumed from a pause may record a stale generation's assignment after the newer one.
   */
  static String zombieSql(int phase) {
    return "SELECT count(*) FROM verify_effect e JOIN verify_business b ON b.message_id ="
        + " e.message_id WHERE b.phase = "
        + phase
        + " AND EXISTS (SELECT 1 FROM verify_assignment o WHERE o.part = e.part AND o.instance <>"
        + " e.instance AND o.assigned_at < pg_xact_commit_timestamp(e.xmin) AND o.generation >"
        + " (SELECT max(a.generation) FROM verify_assignment a WHERE a.part = e.part AND"
        + " a.instance = e.instance AND a.assigned_at <= pg_xact_commit_timestamp(e.xmin)))";
  }

  /**
   * Per key, effects in the order they committed must carry increasing sequence numbers (the commit
   * order of the business transactions); counts effects of {@code phase} that came after a later
   * one of their key.
   */
  private static long orderViolations(Connection c, int phase) throws SQLException {
    long violations = 0;
    try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT e.key, e.seq, b.phase FROM verify_effect e LEFT JOIN verify_business b ON"
                    + " b.message_id = e.message_id ORDER BY e.key,"
                    + " pg_xact_commit_timestamp(e.xmin), e.id");
        ResultSet rs = ps.executeQuery()) {
      String key = null;
      long max = 0;
      while (rs.next()) {
        String k = rs.getString(1);
        long seq = rs.getLong(2);
        int p = rs.getInt(3);
        if (rs.wasNull()) {
          continue; // not a committed business transaction: counted as rolled back, applied
        }
        if (!k.equals(key)) {
          key = k;
          max = 0;
        }
        if (seq < max && p == phase) {
          violations++;
        }
        max = Math.max(max, seq);
      }
    }
    return violations;
  }

  private static Map<UUID, Integer> phases(Connection c) throws SQLException {
    Map<UUID, Integer> m = new HashMap<>();
    try (PreparedStatement ps =
            c.prepareStatement("SELECT message_id, phase FROM verify_business");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        m.put(rs.getObject(1, UUID.class), rs.getInt(2));
      }
    }
    return m;
  }

  private static long count(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
