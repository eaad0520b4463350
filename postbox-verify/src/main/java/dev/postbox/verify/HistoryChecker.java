package dev.postbox.verify;

import dev.postbox.verify.TopicReader.Published;
import java.sql.Connection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;

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
  private final FaultLog log;
  private final OffsetAudit offsets;
  private long reportedDeadLetters;
  private long reportedParked;
  private long reportedUnparked;
  private long reportedPhantomPublished;
  private long reportedPhantomApplied;

  private volatile RelayMode relayMode = RelayMode.IDEMPOTENT;

  private volatile ConsumerMode consumerMode = ConsumerMode.INBOX;

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
    this.log = log;
    this.offsets =
        new OffsetAudit(
            ds, admin, reader, topic, partitions, group, log, () -> consumerMode, () -> journals);
  }

  /**
   * Samples the committed offsets and checks that every record below them is finished; false if the
   * sample could not be taken ({@link OffsetAudit#sample()}).
   */
  boolean auditOffsets() {
    return offsets.sample();
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
      Map<Integer, Long> ends = offsets.endOffsets();
      Map<Integer, Long> committed = offsets.committedOffsets();
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
    boolean finalAudit = offsets.sample();
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
      OffsetAudit.Counts audit = offsets.sinceLastTaken();
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
              audit.violations(),
              audit.samples(),
              audit.recordsChecked(),
              audit.failures(),
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
      reportedDeadLetters = deadLetters;
      reportedParked = parkedRows;
      reportedUnparked = unparkedRows;
      reportedPhantomPublished = phantomPublished;
      reportedPhantomApplied = phantomApplied;
      return f;
    }
  }
}
