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
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The offset audit of a campaign's history: samples the consumer group's committed offsets (and, in
 * the offsets mode, the offsets stored with the effects) and checks that no offset passed a record
 * without its effect, dead letter or parking. Checks each record once; counts samples, records
 * checked, violations and failed samples (each noted in the fault log, never silent). {@link
 * #sinceLastTaken()} hands a phase the counts since the previous phase's. Thread-safe.
 */
final class OffsetAudit {

  /** What the audit counted between two {@link #sinceLastTaken()} calls. */
  record Counts(long violations, long samples, long recordsChecked, long failures) {}

  private final DataSource ds;
  private final Admin admin;
  private final PublishedRecords reader;
  private final String topic;
  private final int partitions;
  private final String group;
  private final FaultLog log;
  private final Supplier<ConsumerMode> consumerMode;
  private final Supplier<JournaledCommits> journals;
  // the committed and (offsets mode) stored offsets audited so far: partition -> offset
  private final Map<Integer, Long> audited = new HashMap<>();
  private final Map<Integer, Long> auditedStored = new HashMap<>();
  private long offsetViolations;
  private long offsetSamples;
  private long offsetRecordsChecked;
  private long offsetAuditFailures;
  private Counts taken = new Counts(0, 0, 0, 0);

  /**
   * {@code journals} gives the consumers' and producers' journals when kept (else null): a record
   * whose message a consumer journaled as applied, or whose commit PostgreSQL lost, is finished.
   */
  OffsetAudit(
      DataSource ds,
      Admin admin,
      PublishedRecords reader,
      String topic,
      int partitions,
      String group,
      FaultLog log,
      Supplier<ConsumerMode> consumerMode,
      Supplier<JournaledCommits> journals) {
    this.ds = ds;
    this.admin = admin;
    this.reader = reader;
    this.topic = topic;
    this.partitions = partitions;
    this.group = group;
    this.log = log;
    this.consumerMode = consumerMode;
    this.journals = journals;
  }

  /** The counts since the previous call (the first: since the start). */
  synchronized Counts sinceLastTaken() {
    Counts now =
        new Counts(offsetViolations, offsetSamples, offsetRecordsChecked, offsetAuditFailures);
    Counts since =
        new Counts(
            now.violations() - taken.violations(),
            now.samples() - taken.samples(),
            now.recordsChecked() - taken.recordsChecked(),
            now.failures() - taken.failures());
    taken = now;
    return since;
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
   * letter, or is parked): a committed offset must never pass an unfinished record. Checks each
   * record once. Returns false if the sample could not be taken (broker or database down): counted
   * and noted in the fault log, never silent (a campaign without samples is inconclusive).
   */
  synchronized boolean sample() {
    if (admin == null) {
      return true; // no offsets to audit (acks)
    }
    try {
      if (!auditBelow(committedOffsets(), audited, "committed")) {
        return false;
      }
      // the offsets mode: the offsets stored with the effects are what decide where reading starts
      return consumerMode.get() != ConsumerMode.OFFSETS
          || auditBelow(storedOffsets(), auditedStored, "stored");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      auditFailed("interrupted");
      return false;
    } catch (Exception e) {
      auditFailed(String.valueOf(e));
      return false;
    }
  }

  /**
   * The offsets the consumers stored in PostgreSQL for the group (the offsets mode's {@code
   * postbox_consumer_offset}): partition -> next offset.
   */
  Map<Integer, Long> storedOffsets() throws SQLException {
    Map<Integer, Long> out = new HashMap<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT partition, next_offset FROM postbox_consumer_offset WHERE consumer_group ="
                    + " ? AND topic = ?")) {
      ps.setString(1, group);
      ps.setString(2, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getInt(1), rs.getLong(2));
        }
      }
    }
    return out;
  }

  /**
   * Checks that every record below {@code committed} (from where {@code seen} says the previous
   * sample ended) has its effect; {@code what} names the offsets in the fault log.
   */
  private boolean auditBelow(Map<Integer, Long> committed, Map<Integer, Long> seen, String what)
      throws Exception {
    if (!reader.awaitPositions(committed, Duration.ofSeconds(10))) {
      auditFailed(
          "the topic was not read up to the " + what + " offsets " + committed + " in 10 s");
      return false;
    }
    List<Published> toCheck = new ArrayList<>();
    Map<Integer, Long> upTo = new HashMap<>();
    committed.forEach((p, c) -> {
      long from = seen.getOrDefault(p, 0L);
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
    Finished done = finished(ids);
    for (Published r : toCheck) {
      if (!done.contains(r)) {
        offsetViolations++;
        log.note(
            "offset-violation",
            "partition "
                + r.partition()
                + " "
                + what
                + " past offset "
                + r.offset()
                + " (message "
                + r.id()
                + ") which has no effect");
      }
    }
    seen.putAll(upTo);
    offsetSamples++;
    offsetRecordsChecked += toCheck.size();
    return true;
  }

  private void auditFailed(String why) {
    offsetAuditFailures++;
    log.note("offset-audit-failed", why);
  }

  /**
   * What of a sample is finished: message ids with an effect or a dead letter, and records
   * (partition and offset) parked.
   */
  private record Finished(Set<UUID> ids, Set<Long> parked) {
    boolean contains(Published r) {
      return (r.id() != null && ids.contains(r.id()))
          || parked.contains(position(r.partition(), r.offset()));
    }

    static long position(int partition, long offset) {
      return ((long) partition << 48) | offset;
    }
  }

  /**
   * Which of {@code ids} have an effect or a dead letter, and which records of the topic are parked
   * (a parked record's offset may be committed: it waits in {@code postbox_parked}); one statement,
   * so one snapshot (a parked record applied meanwhile is seen in one place or the other).
   */
  private Finished finished(Set<UUID> ids) throws SQLException {
    Set<UUID> done = new HashSet<>();
    Set<Long> parked = new HashSet<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id, NULL::int, NULL::bigint FROM verify_effect WHERE message_id ="
                    + " ANY (?) UNION SELECT message_id, NULL, NULL FROM postbox_dead_letter WHERE"
                    + " message_id = ANY (?) UNION SELECT NULL, partition, \"offset\" FROM"
                    + " postbox_parked WHERE topic = ?")) {
      Array a = c.createArrayOf("uuid", ids.toArray());
      ps.setArray(1, a);
      ps.setArray(2, a);
      ps.setString(3, topic);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          UUID id = rs.getObject(1, UUID.class);
          if (id != null) {
            done.add(id);
          } else {
            parked.add(Finished.position(rs.getInt(2), rs.getLong(3)));
          }
        }
      }
    }
    // applied and committed by a consumer (its journal), or never in the database after all (a
    // producer's commit PostgreSQL lost): finished as far as Postbox goes; the check counts both
    JournaledCommits j = journals.get();
    if (j != null) {
      Set<UUID> open = new HashSet<>(ids);
      open.removeAll(done);
      done.addAll(j.finishedAmong(open, ds));
    }
    return new Finished(done, parked);
  }
}
