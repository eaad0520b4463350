package dev.postbox.verify;

import java.util.ArrayList;
import java.util.List;

/**
 * What one {@link HistoryChecker} check of one phase (a scenario round) found, or its sum over
 * rounds ({@link #plus}).
 *
 * @param deadLettered dead letters written since the previous check (any message, applied or not):
 *     the harness's consumers never mean to dead-letter, so each is a violation (a false conflict
 *     or a decoding bug must not pass as "not lost")
 * @param offsetAuditFailures offset samples that could not be taken (broker or database down, topic
 *     not read up to the committed offsets in time)
 * @param parked rows written into {@code postbox_parked} (a message parked, or appended behind its
 *     parked key), counted by a trigger
 * @param unparked rows that left {@code postbox_parked} (applied from there, or dead-lettered)
 * @param stalePublishes records of the phase whose relay epoch ({@code pb_relay_epoch}) is lower
 *     than an epoch of their lane seen earlier in their partition: published by a relay that had
 *     lost the lane ({@link EpochAudit})
 * @param staleIsViolation whether a stale publish is a violation (the transactional relay) or only
 *     measured (the idempotent relay)
 * @param unstampedRecords records of the phase without the relay's lane or epoch header, which the
 *     stale-publish audit cannot judge: reported, and with {@code staleIsViolation} they make the
 *     scenario inconclusive
 * @param finalAuditFailed whether the offset audit at the check itself (the sample after the
 *     phase's faults) could not be taken: the scenario is then inconclusive, since the offsets
 *     committed after the previous sample were never checked
 * @param lostByPostgres messages of the phase whose commit PostgreSQL acknowledged (in a producer's
 *     {@link CommitJournal}) and that the database no longer holds: transactions PostgreSQL lost
 *     (an asynchronous standby promoted before it had them), told apart from events Postbox lost
 *     ({@code lost}); what was published or applied of them is not counted as a rolled-back
 *     message's
 * @param postgresLoss how {@code lostByPostgres} is judged: a violation on a synchronous standby
 *     (which promises that no acknowledged commit is lost), measured on an asynchronous one, or not
 *     checked (no commit journals: one server)
 */
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
    long offsetRecordsChecked,
    long offsetAuditFailures,
    long parked,
    long unparked,
    long stalePublishes,
    boolean staleIsViolation,
    long unstampedRecords,
    boolean finalAuditFailed,
    long lostByPostgres,
    PostgresLoss postgresLoss) {

  /** How commits PostgreSQL lost are judged. */
  enum PostgresLoss {
    /** No commit journals were kept: not looked for (printed as n/a). */
    NOT_CHECKED,
    /** An asynchronous standby: PostgreSQL may lose the last commits; measured. */
    MEASURED,
    /** A synchronous standby: no acknowledged commit may be lost. */
    VIOLATION;

    /** The stricter of two (rounds summed). */
    PostgresLoss and(PostgresLoss o) {
      return compareTo(o) >= 0 ? this : o;
    }
  }

  /** Findings with nothing counted and nothing judged: what a scenario that did not run has. */
  static final Findings NONE = builder().build();

  /** A builder whose every count starts at 0, every flag false, PostgreSQL's loss not checked. */
  static Builder builder() {
    return new Builder();
  }

  /** Findings named field by field (for checks that count only some of them, and tests). */
  static final class Builder {
    private long messages;
    private long rolledBack;
    private long lost;
    private long deadLettered;
    private long duplicateEffects;
    private long topicRecords;
    private long topicDuplicates;
    private long staleRepublishes;
    private long orderViolations;
    private long zombieApplies;
    private long rolledBackPublished;
    private long rolledBackApplied;
    private long offsetViolations;
    private long offsetSamples;
    private long offsetRecordsChecked;
    private long offsetAuditFailures;
    private long parked;
    private long unparked;
    private long stalePublishes;
    private boolean staleIsViolation;
    private long unstampedRecords;
    private boolean finalAuditFailed;
    private long lostByPostgres;
    private PostgresLoss postgresLoss = PostgresLoss.NOT_CHECKED;

    private Builder() {}

    Builder messages(long messages) {
      this.messages = messages;
      return this;
    }

    Builder rolledBack(long rolledBack) {
      this.rolledBack = rolledBack;
      return this;
    }

    Builder lost(long lost) {
      this.lost = lost;
      return this;
    }

    Builder deadLettered(long deadLettered) {
      this.deadLettered = deadLettered;
      return this;
    }

    Builder duplicateEffects(long duplicateEffects) {
      this.duplicateEffects = duplicateEffects;
      return this;
    }

    Builder topicRecords(long topicRecords) {
      this.topicRecords = topicRecords;
      return this;
    }

    Builder topicDuplicates(long topicDuplicates) {
      this.topicDuplicates = topicDuplicates;
      return this;
    }

    Builder staleRepublishes(long staleRepublishes) {
      this.staleRepublishes = staleRepublishes;
      return this;
    }

    Builder orderViolations(long orderViolations) {
      this.orderViolations = orderViolations;
      return this;
    }

    Builder zombieApplies(long zombieApplies) {
      this.zombieApplies = zombieApplies;
      return this;
    }

    Builder rolledBackPublished(long rolledBackPublished) {
      this.rolledBackPublished = rolledBackPublished;
      return this;
    }

    Builder rolledBackApplied(long rolledBackApplied) {
      this.rolledBackApplied = rolledBackApplied;
      return this;
    }

    Builder offsetViolations(long offsetViolations) {
      this.offsetViolations = offsetViolations;
      return this;
    }

    Builder offsetSamples(long offsetSamples) {
      this.offsetSamples = offsetSamples;
      return this;
    }

    Builder offsetRecordsChecked(long offsetRecordsChecked) {
      this.offsetRecordsChecked = offsetRecordsChecked;
      return this;
    }

    Builder offsetAuditFailures(long offsetAuditFailures) {
      this.offsetAuditFailures = offsetAuditFailures;
      return this;
    }

    Builder parked(long parked) {
      this.parked = parked;
      return this;
    }

    Builder unparked(long unparked) {
      this.unparked = unparked;
      return this;
    }

    Builder stalePublishes(long stalePublishes) {
      this.stalePublishes = stalePublishes;
      return this;
    }

    Builder staleIsViolation(boolean staleIsViolation) {
      this.staleIsViolation = staleIsViolation;
      return this;
    }

    Builder unstampedRecords(long unstampedRecords) {
      this.unstampedRecords = unstampedRecords;
      return this;
    }

    Builder finalAuditFailed(boolean finalAuditFailed) {
      this.finalAuditFailed = finalAuditFailed;
      return this;
    }

    Builder lostByPostgres(long lostByPostgres) {
      this.lostByPostgres = lostByPostgres;
      return this;
    }

    Builder postgresLoss(PostgresLoss postgresLoss) {
      this.postgresLoss = postgresLoss;
      return this;
    }

    Findings build() {
      return new Findings(
          messages,
          rolledBack,
          lost,
          deadLettered,
          duplicateEffects,
          topicRecords,
          topicDuplicates,
          staleRepublishes,
          orderViolations,
          zombieApplies,
          rolledBackPublished,
          rolledBackApplied,
          offsetViolations,
          offsetSamples,
          offsetRecordsChecked,
          offsetAuditFailures,
          parked,
          unparked,
          stalePublishes,
          staleIsViolation,
          unstampedRecords,
          finalAuditFailed,
          lostByPostgres,
          postgresLoss);
    }
  }

  long violations() {
    return (staleIsViolation ? stalePublishes : 0)
        + (postgresLoss == PostgresLoss.VIOLATION ? lostByPostgres : 0)
        + lost
        + deadLettered
        + duplicateEffects
        + orderViolations
        + zombieApplies
        + rolledBackPublished
        + rolledBackApplied
        + offsetViolations;
  }

  /**
   * Why these findings cannot count as a pass even without a violation (empty when they can): no
   * business transaction, an offset audit that never sampled or never checked a record, or (for a
   * scenario that exercises parking) nothing parked.
   */
  List<String> inconclusiveReasons(boolean parkingExpected) {
    List<String> reasons = new ArrayList<>();
    if (messages == 0) {
      reasons.add("no business transaction committed during the faults");
    }
    if (offsetSamples == 0) {
      reasons.add(
          "the offset audit took no sample ("
              + offsetAuditFailures
              + " attempts failed; see offset-audit-failed in faults.log)");
    } else if (offsetRecordsChecked == 0) {
      reasons.add(
          "the offset audit checked no record ("
              + offsetSamples
              + " samples; no committed offset moved)");
    }
    if (parkingExpected && parked == 0) {
      reasons.add("nothing was parked: the parking path was not exercised");
    }
    if (finalAuditFailed) {
      reasons.add(
          "the final offset audit failed (see offset-audit-failed in faults.log): offsets"
              + " committed after its last sample were not checked");
    }
    if (staleIsViolation && unstampedRecords > 0) {
      reasons.add(
          unstampedRecords
              + " records carry no relay lane/epoch header: the stale-publish check could not"
              + " judge them");
    }
    return reasons;
  }

  /** The sum of two checks (rounds of one scenario). */
  Findings plus(Findings o) {
    return new Findings(
        messages + o.messages,
        rolledBack + o.rolledBack,
        lost + o.lost,
        deadLettered + o.deadLettered,
        duplicateEffects + o.duplicateEffects,
        topicRecords + o.topicRecords,
        topicDuplicates + o.topicDuplicates,
        staleRepublishes + o.staleRepublishes,
        orderViolations + o.orderViolations,
        zombieApplies + o.zombieApplies,
        rolledBackPublished + o.rolledBackPublished,
        rolledBackApplied + o.rolledBackApplied,
        offsetViolations + o.offsetViolations,
        offsetSamples + o.offsetSamples,
        offsetRecordsChecked + o.offsetRecordsChecked,
        offsetAuditFailures + o.offsetAuditFailures,
        parked + o.parked,
        unparked + o.unparked,
        stalePublishes + o.stalePublishes,
        staleIsViolation || o.staleIsViolation,
        unstampedRecords + o.unstampedRecords,
        finalAuditFailed || o.finalAuditFailed,
        lostByPostgres + o.lostByPostgres,
        postgresLoss.and(o.postgresLoss));
  }
}
