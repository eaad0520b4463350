package dev.postbox.admin;

import dev.postbox.admin.internal.AuditQueries;
import dev.postbox.admin.internal.DeadLetterQueries;
import dev.postbox.admin.internal.ReplayJobQueries;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.ReplayRoute;
import dev.postbox.jdbc.Replayer;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * What one operator does, each action through the audited, rate-limited {@link Replayer} acting for
 * {@link #actor()}: the change and its audit row commit together. Thread-safe.
 */
public final class OperatorActions {

  private final Replayer replayer;
  private final DeadLetterQueries deadLetters;
  private final AuditQueries audit;
  private final ReplayJobQueries jobs;

  OperatorActions(
      Replayer replayer, DeadLetterQueries deadLetters, AuditQueries audit, ReplayJobQueries jobs) {
    this.replayer = replayer;
    this.deadLetters = deadLetters;
    this.audit = audit;
    this.jobs = jobs;
  }

  /** Who acts. */
  public String actor() {
    return replayer.by();
  }

  /**
   * Records that the actor reveals dead letter {@code id}'s payload (an audit row {@code
   * REVEAL_PAYLOAD}, no change to the letter) before a front end shows it unmasked.
   *
   * @throws NoSuchElementException if there is no such letter
   */
  public void revealPayload(long id) {
    if (!audit.recordReveal(actor(), id)) {
      throw new NoSuchElementException("no dead letter " + id);
    }
  }

  /** Replays one dead letter (if PENDING) to its consumer only ({@link ReplayRoute#TARGETED}). */
  public ReplayResult replay(long id) {
    return replay(id, ReplayRoute.TARGETED);
  }

  /** Replays one dead letter (if PENDING) to the consumers {@code route} names. */
  public ReplayResult replay(long id, ReplayRoute route) {
    return replayer.replay(id, route);
  }

  /**
   * Replays the PENDING letters {@code filter} matches (a group: filter by fingerprint), oldest
   * first, at most {@link PostboxAdmin#MAX_GROUP_ACTION}, paced by the rate, each to its consumer
   * only.
   */
  public ReplayResult replayAll(DeadLetterFilter filter) {
    return replayAll(filter, ReplayRoute.TARGETED);
  }

  /** As {@link #replayAll(DeadLetterFilter)}, to the consumers {@code route} names. */
  public ReplayResult replayAll(DeadLetterFilter filter, ReplayRoute route) {
    List<Long> replayed = new ArrayList<>();
    List<Long> skipped = new ArrayList<>();
    List<Long> failed = new ArrayList<>();
    for (long id : deadLetters.pendingIds(filter, PostboxAdmin.MAX_GROUP_ACTION)) {
      ReplayResult r;
      try {
        r = replayer.replay(id, route);
      } catch (NoSuchElementException e) {
        continue; // purged meanwhile
      }
      replayed.addAll(r.replayed());
      skipped.addAll(r.skipped());
      failed.addAll(r.failed());
    }
    return new ReplayResult(replayed, skipped, failed);
  }

  /**
   * Replays the PENDING letters of one key of a consumer in order, to that consumer only; stops at
   * the first that fails (the later ones are reported skipped).
   */
  public ReplayResult replayKey(String consumer, String key) {
    return replayKey(consumer, key, ReplayRoute.TARGETED);
  }

  /** As {@link #replayKey(String, String)}, to the consumers {@code route} names. */
  public ReplayResult replayKey(String consumer, String key, ReplayRoute route) {
    return replayer.replayKey(consumer, key, route);
  }

  /**
   * Writes a corrected copy (new message id, linked to the original) of a letter's message with
   * {@code payload}; the letter is discarded as replaced.
   *
   * @return the copy's message id
   */
  public UUID edit(long id, byte[] payload, Optional<String> contentType, String reason) {
    return replayer.editAsCopy(id, payload, contentType, reason);
  }

  /** Discards one PENDING letter with a reason. */
  public void discard(long id, String reason) {
    replayer.discard(id, reason);
  }

  /**
   * Discards the PENDING letters {@code filter} matches (at most {@link
   * PostboxAdmin#MAX_GROUP_ACTION}), each with the reason and its own audit row.
   *
   * @return how many were discarded
   */
  public int discardAll(DeadLetterFilter filter, String reason) {
    Objects.requireNonNull(reason, "reason");
    int n = 0;
    for (long id : deadLetters.pendingIds(filter, PostboxAdmin.MAX_GROUP_ACTION)) {
      try {
        replayer.discard(id, reason);
        n++;
      } catch (NoSuchElementException | IllegalStateException e) {
        // replayed, discarded or purged by someone else meanwhile
      }
    }
    return n;
  }

  /** Makes a parked key's head due now; returns how many messages the key holds. */
  public int releaseParked(String consumer, String key) {
    return replayer.releaseParked(consumer, key);
  }

  /** Skips a parked key's head (kept as a discarded dead letter); returns that letter's id. */
  public long skipParked(String consumer, String key, String reason) {
    return replayer.skipParked(consumer, key, reason);
  }

  /** Retries a blocked outbox row; false if no row at the position holds. */
  public boolean retryBlocked(long position) {
    return replayer.retryBlocked(position);
  }

  /** Skips a blocked outbox row for good; false if no row at the position holds. */
  public boolean skipBlocked(long position, String reason) {
    return replayer.skipBlocked(position, reason);
  }

  /**
   * Starts a replay job over the PENDING letters {@code selection} covers now (fixed from here on,
   * oldest first), each to its consumer only; a {@link ReplayJobRunner} works it in the background.
   * Writes one {@code REPLAY_JOB} audit row; each letter's replay writes its own {@code REPLAY} row
   * as this actor.
   *
   * @param confirmation for more letters than the confirmation threshold ({@link
   *     ReplayPreview#confirmationNeeded()}): their count as the operator typed it
   * @throws IllegalArgumentException if the reason is blank, the confirmation is missing or is not
   *     the count, or the selection covers more letters than one job may
   * @throws IllegalStateException if the selection covers no PENDING letter
   */
  public ReplayJob startReplayJob(
      ReplaySelection selection, String reason, Optional<String> confirmation) {
    return startReplayJob(selection, reason, confirmation, ReplayRoute.TARGETED);
  }

  /** As {@link #startReplayJob(ReplaySelection, String, Optional)}, to the consumers of route. */
  public ReplayJob startReplayJob(
      ReplaySelection selection, String reason, Optional<String> confirmation, ReplayRoute route) {
    Objects.requireNonNull(selection, "selection");
    Objects.requireNonNull(confirmation, "confirmation");
    Objects.requireNonNull(route, "route");
    return jobs.create(actor(), selection, reason, confirmation, route);
  }

  /**
   * Pauses a RUNNING replay job (its runner stops after the letter in hand).
   *
   * @throws NoSuchElementException if there is no such job
   * @throws IllegalStateException if it is not RUNNING
   */
  public ReplayJob pauseReplayJob(long id) {
    return jobs.change(id, actor(), ReplayJob.State.PAUSED, ReplayJob.State.RUNNING);
  }

  /**
   * Resumes a PAUSED replay job (the next free runner carries on where it stopped).
   *
   * @throws NoSuchElementException if there is no such job
   * @throws IllegalStateException if it is not PAUSED
   */
  public ReplayJob resumeReplayJob(long id) {
    return jobs.change(id, actor(), ReplayJob.State.RUNNING, ReplayJob.State.PAUSED);
  }

  /**
   * Cancels a RUNNING or PAUSED replay job for good; the letters not yet worked stay as they are.
   *
   * @throws NoSuchElementException if there is no such job
   * @throws IllegalStateException if it has ended
   */
  public ReplayJob cancelReplayJob(long id) {
    return jobs.change(
        id, actor(), ReplayJob.State.CANCELLED, ReplayJob.State.RUNNING, ReplayJob.State.PAUSED);
  }
}
