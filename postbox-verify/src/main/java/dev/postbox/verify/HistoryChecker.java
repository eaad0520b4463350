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
 * verify_assignment}), the dead letters, the parked records ({@code verify_parking}, written by a
 * trigger on {@code postbox_parked}), and the consumer group's committed offsets.
 *
 * <p>Thread-safe.
 */
final class HistoryChecker {

  private final DataSource ds;
  private final Admin admin;
  private final PublishedRecords reader;
  private final String topic;
  private final int partitions;
  private final String group;
  private final FaultLog log;
  private final Map<Integer, Long> audited = new HashMap<>();
  private long offsetViolations;
  private long offsetSamples;
  private long offsetRecordsChecked;
  private long offsetAuditFailures;
  private long reportedOffsetAuditFailures;
  private long reportedDeadLetters;
  private long reportedParked;
  private long reportedUnparked;
  private long reportedOffsetSamples;
  private long reportedOffsetRecordsChecked;
  private long reportedOffsetViolations;
  private long reportedPhantomPublished;
  private long reportedPhantomApplied;

  private volatile RelayMode relayMode = RelayMode.IDEMPOTENT;

  private volatile ConsumerMode consumerMode = ConsumerMode.INBOX;
  // the stored offsets (offsets mode) audited so far: partition -> offset
  private final Map<Integer, Long> auditedStored = new HashMap<>();

  /** How the consumers apply: in the offsets mode the stored offsets are audited too. */
  void consumerMode(ConsumerMode mode) {
    this.consumerMode = mode;
  }

  // the producers' and consumers' journals, when they keep them (a PostgreSQL pair)
  private volatile JournaledCommits journals;

  /**
   * Judges the commits the producers and consumers journaled in {@code dir} ({@link
   * JournaledCommits}): one the database no longer holds was lost by PostgreSQL, a violation unless
   * {@code asynchronousStandby}.
   */
  void commitJournals(java.nio.file.Path dir, boolean asynchronousStandby) {
    this.journals = new JournaledCommits(dir, asynchronousStandby);
  }

  /** Which relay the campaign runs: with the transactional relay a stale publish is a violation. */
  void relayMode(RelayMode mode) {
    this.relayMode = mode;
  }

  /**
   * A checker of {@code topic}'s history as {@code reader} read it; {@code admin} null means a
   * transport without offsets (RabbitMQ: a delivery is acked, not committed): no offset audit, and
   * {@link #drained()} looks at the database only.
   */
  HistoryChecker(
      DataSource ds,
      Admin admin,
      PublishedRecords reader,
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
   * letter, or is parked): a committed offset must never pass an unfinished record. Checks each
   * record once. Returns false if the sample could not be taken (broker or database down): counted
   * and noted in the fault log, never silent (a campaign without samples is inconclusive).
   */
  synchronized boolean auditOffsets() {
    if (admin == null) {
      return true; // no offsets to audit (acks)
    }
    try {
      if (!auditBelow(committedOffsets(), audited, "committed")) {
        return false;
      }
      // the offsets mode: the offsets stored with the effects are what decide where reading starts
      return consumerMode != ConsumerMode.OFFSETS
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
    if (journals != null) {
      Set<UUID> open = new HashSet<>(ids);
      open.removeAll(done);
      done.addAll(journals.finishedAmong(open, ds));
    }
    return new Finished(done, parked);
  }

  /** The consumers' journaled applies, read now; empty without journals. */
  private Map<UUID, Integer> appliedJournal() {
    return journals == null ? Map.of() : journals.applied();
  }

  /**
   * Whether everything is through: no unpublished outbox row, every committed business transaction
   * applied (or dead-lettered), and the group's committed offsets at the end of every partition.
   */
  boolean drained() {
    try (Connection c = ds.getConnection()) {
      if (HistoryQueries.count(
              c,
              "SELECT count(*) FROM postbox_outbox WHERE published_at IS NULL AND failed_at IS NULL")
          > 0) {
        return false;
      }
      // every committed business transaction applied, dead-lettered, or (journaled by a consumer)
      // applied with an effect PostgreSQL lost since
      List<UUID> unfinished = HistoryQueries.unfinished(c, "true");
      if (!unfinished.isEmpty() && !appliedJournal().keySet().containsAll(unfinished)) {
        return false;
      }
      if (admin == null) {
        return true;
      }
      Map<Integer, Long> ends = endOffsets();
      Map<Integer, Long> committed = committedOffsets();
      for (Map.Entry<Integer, Long> e : ends.entrySet()) {
        long c0 = committed.getOrDefault(e.getKey(), 0L);
        // a transaction's commit marker takes the last offset: the consumers commit past the last
        // record they finished, which the reader (read_committed) reached the end behind
        if (e.getValue() > 0
            && c0 < e.getValue()
            && !(reader.position(e.getKey()) >= e.getValue()
                && c0 >= reader.lastRecordEnd(e.getKey()))) {
          return false;
        }
      }
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  /**
   * Business transactions committed in {@code phase} so far; empty when PostgreSQL cannot answer
   * now (down, failing over), which says nothing about how many committed.
   */
  java.util.OptionalLong committedIn(int phase) {
    try (Connection c = ds.getConnection()) {
      return java.util.OptionalLong.of(
          HistoryQueries.count(c, "SELECT count(*) FROM verify_business WHERE phase = " + phase));
    } catch (Exception e) {
      return java.util.OptionalLong.empty();
    }
  }

  /** Checks the whole history; counts what belongs to {@code phase}. */
  synchronized Findings check(int phase) throws Exception {
    // the last sample covers what was committed since the one before: without it, the offsets
    // committed at the end of the phase would go unchecked, so a failed one cannot pass
    boolean finalAudit = auditOffsets();
    try (Connection c = ds.getConnection()) {
      long messages =
          HistoryQueries.count(c, "SELECT count(*) FROM verify_business WHERE phase = " + phase);
      long rolledBack =
          HistoryQueries.count(c, "SELECT count(*) FROM verify_rolled_back WHERE phase = " + phase);
      // a message the consumers journaled as applied (their commit returned) whose effect the
      // database no longer holds: an effect PostgreSQL lost, not a message Postbox lost
      Map<UUID, Integer> applied = appliedJournal();
      List<UUID> unapplied = HistoryQueries.unfinished(c, "phase = " + phase);
      long lost = unapplied.stream().filter(id -> !applied.containsKey(id)).count();
      // every acknowledged effect the database no longer holds, whether applied again since or not
      Map<UUID, Integer> effectsLost =
          journals == null ? Map.of() : journals.effectsLost(HistoryQueries.effectCounts(c));
      // every dead letter, whether its message was applied (a false conflict) or not, and whether
      // it has a message id at all (a record that could not be decoded)
      long deadLetters = HistoryQueries.count(c, "SELECT count(*) FROM postbox_dead_letter");
      long parkedRows =
          HistoryQueries.count(c, "SELECT count(*) FROM verify_parking WHERE event = 'parked'");
      long unparkedRows =
          HistoryQueries.count(c, "SELECT count(*) FROM verify_parking WHERE event = 'unparked'");
      long duplicateEffects =
          HistoryQueries.count(c, HistoryQueries.duplicateEffectsSql(phase, "e.message_id"));
      if (consumerMode == ConsumerMode.OFFSETS) {
        // the offsets mode applies each record position once; a copy the relay published again
        // (same message id, another offset) is applied again by design: measured, not a violation
        long perPosition =
            HistoryQueries.count(c, HistoryQueries.duplicateEffectsSql(phase, "e.part, e.off"));
        log.note(
            "offsets-mode-duplicates",
            "phase "
                + phase
                + ": "
                + perPosition
                + " second effects of one record position (violations); "
                + (duplicateEffects - perPosition)
                + " effects of republished copies (same message id at another offset; measured)");
        duplicateEffects = perPosition;
      }
      long zombieApplies = HistoryQueries.count(c, HistoryQueries.zombieSql(phase));
      Map<UUID, Integer> phases = HistoryQueries.phases(c);
      // acknowledged commits the database no longer holds: lost by PostgreSQL, not by Postbox;
      // what was published or applied of them is no rolled-back message's
      Map<UUID, Integer> lostCommits =
          journals == null ? Map.of() : CommitJournal.missing(journals.committed(), phases);
      long effectsLostByPostgres =
          effectsLost.entrySet().stream()
              .filter(e -> Integer.valueOf(phase).equals(phases.get(e.getKey())))
              .mapToLong(Map.Entry::getValue)
              .sum();
      long lostByPostgres =
          lostCommits.values().stream().filter(p -> p == phase).count() + effectsLostByPostgres;
      java.util.List<UUID> effectsOfNoRow = HistoryQueries.effectsWithoutBusiness(c);
      long phantomApplied =
          effectsOfNoRow.stream().filter(id -> !lostCommits.containsKey(id)).count();
      long appliedOfLost = effectsOfNoRow.size() - phantomApplied;
      boolean offsetsMode = consumerMode == ConsumerMode.OFFSETS;
      // a message whose first effect PostgreSQL lost is judged by that loss, not by where its
      // re-applied copy came
      long orderViolations =
          HistoryQueries.orderViolations(c, phase, offsetsMode, effectsLost.keySet());
      if (offsetsMode) {
        long reapplied = HistoryQueries.reappliedOutOfOrder(c, phase);
        if (reapplied > 0) {
          log.note(
              "offsets-mode-order",
              "phase "
                  + phase
                  + ": "
                  + reapplied
                  + " effects of republished copies came after a later message of their key"
                  + " (measured: the offsets mode applies a copy at a new offset again)");
        }
      }
      long topicRecords = 0;
      long publishedOfLost = 0;
      long phantomPublished = 0;
      long staleRepublishes = 0;
      Set<UUID> distinct = new HashSet<>();
      for (List<Published> records : reader.all().values()) {
        Map<String, Long> maxSeq = new HashMap<>();
        for (Published r : records) {
          Integer p = r.id() == null ? null : phases.get(r.id());
          if (p == null && lostCommits.containsKey(r.id())) {
            publishedOfLost++;
            continue;
          }
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
      EpochAudit.Result epochs =
          EpochAudit.audit(
              reader.all(),
              r -> r.id() != null && Integer.valueOf(phase).equals(phases.get(r.id())));
      Findings f =
          new Findings(
              messages,
              rolledBack,
              lost,
              deadLetters - reportedDeadLetters,
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
              offsetRecordsChecked - reportedOffsetRecordsChecked,
              offsetAuditFailures - reportedOffsetAuditFailures,
              parkedRows - reportedParked,
              unparkedRows - reportedUnparked,
              epochs.stale(),
              relayMode == RelayMode.TRANSACTIONAL,
              epochs.unstamped(),
              !finalAudit,
              lostByPostgres,
              journals == null ? Findings.PostgresLoss.NOT_CHECKED : journals.judged());
      if (!lostCommits.isEmpty() || effectsLostByPostgres > 0) {
        log.note(
            "lost-by-postgres",
            "phase "
                + phase
                + ": "
                + lostByPostgres
                + " acknowledged commits of the phase are not in the database (producers' "
                + lostCommits.size()
                + " in all phases, consumers' effects "
                + effectsLostByPostgres
                + " in this phase); records of lost commits on the topic "
                + publishedOfLost
                + ", effects of them applied "
                + appliedOfLost
                + (journals.asynchronousStandby()
                    ? " (an asynchronous standby: measured)"
                    : " (a synchronous standby: violations)"));
      }
      reportedOffsetAuditFailures = offsetAuditFailures;
      reportedDeadLetters = deadLetters;
      reportedParked = parkedRows;
      reportedUnparked = unparkedRows;
      reportedOffsetSamples = offsetSamples;
      reportedOffsetRecordsChecked = offsetRecordsChecked;
      reportedPhantomPublished = phantomPublished;
      reportedPhantomApplied = phantomApplied;
      reportedOffsetViolations = offsetViolations;
      return f;
    }
  }
}
