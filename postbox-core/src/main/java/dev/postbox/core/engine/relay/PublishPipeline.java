package dev.postbox.core.engine.relay;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.spi.LaneFencedException;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The publishing thread's loop: claims the owned lanes' pending rows, hands them to the publisher
 * and settles (marks) each batch once its outcomes are in, with batch n+1 claimed while n is in
 * flight. Knows lanes only through {@link LaneOwnership} and the broker only through {@link
 * RelayPublisher}. Its state belongs to the publishing thread.
 */
final class PublishPipeline {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);
  private static final int PURGE_CHUNK = 5_000;
  private static final long GRACE_FIRST_STEP_NANOS = 1_000_000;
  private static final long GRACE_MAX_STEP_NANOS = 4_000_000;

  /**
   * A batch handed to the publisher and not yet settled (marked): the relay claims the next batch
   * and marks the previous one while it is in flight. {@code sent} is what the publisher returned
   * (a batch pipelined behind this one is sent after it); {@code pending} adds the outcomes of rows
   * decided without the publisher.
   */
  private record InFlight(
      Collection<LaneLease> leases,
      List<OutboxRecord> batch,
      RelayPublisher.PendingPublish sent,
      RelayPublisher.PendingPublish pending,
      long sentNanos) {
    Set<Long> positions() {
      Set<Long> p = new HashSet<>(batch.size() * 2);
      for (OutboxRecord r : batch) {
        p.add(r.position());
      }
      return p;
    }
  }

  private final RelayEngine.Config config;
  private final String owner;
  private final RelayStore store;
  private final RelayPublisher publisher;
  private final LaneOwnership lanes;
  private final RelayMeters meters;
  private final RelayListener listener;
  private final UnpublishableRowMarker unpublishableRows;
  private final Ticker ticker;
  private final BooleanSupplier running;

  // publishing thread only
  private int failures;
  private boolean idle = true; // a new instance row starts idle (V7 default)
  private long graceEnds; // until then an empty claim is retried shortly instead of going idle
  private long graceStepNanos;
  private long nextPurge;
  private InFlight flying;
  private long claimNanos;

  PublishPipeline(
      RelayEngine.Config config,
      String owner,
      RelayStore store,
      RelayPublisher publisher,
      LaneOwnership lanes,
      RelayMeters meters,
      RelayListener listener,
      BooleanSupplier running) {
    this.config = config;
    this.owner = owner;
    this.store = store;
    this.publisher = publisher;
    this.lanes = lanes;
    this.meters = meters;
    this.listener = listener;
    this.running = running;
    this.ticker = config.ticker();
    this.graceEnds = ticker.nanos();
    this.unpublishableRows =
        new UnpublishableRowMarker(
            config.instanceId(), config.unpublishableRows(), store, meters.unpublishableCounter());
  }

  /**
   * Claims, publishes and marks in a pipeline: while batch n is in flight to the broker, the loop
   * claims batch n+1 (leaving out n's rows, still pending), waits for n's outcomes, sends n+1 if
   * every row of n was acknowledged, and only then marks n. So batches are never in flight
   * together, and a failure in n stops n+1 from being sent (it is dropped unsent and claimed again,
   * after n's failed rows, once the backoff is over): no row of a key goes out ahead of an earlier
   * row of that key that was not acknowledged.
   *
   * <p>With a publisher that {@linkplain RelayPublisher#pipelinesInOrder() pipelines in order}, n+1
   * is sent behind n ({@link RelayPublisher#sendAfter(RelayPublisher.PendingPublish, List, List)})
   * as soon as it is claimed, before n's outcomes, so two batches wait for the broker at once; the
   * publisher keeps their order on one stream and sends nothing of n+1 past a failure of n it knows
   * of. If any row of n then failed, n+1 is not marked whatever its outcomes: the loop waits for
   * them and leaves its rows pending, to be claimed again after n's failed rows.
   *
   * <p>Either way, a crash after n+1 was sent and before n was marked republishes both, in position
   * order (duplicates, as for a crash between acknowledgement and mark). Runs until {@code running}
   * turns false or the thread is interrupted.
   */
  void run() {
    nextPurge = ticker.nanos();
    try {
      while (running.getAsBoolean()) {
        try {
          turn();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (RuntimeException e) {
          failures++;
          log.warn(
              "relay {}: cycle failed (attempt {}); backing off", config.instanceId(), failures, e);
          abandon();
          try {
            config.sleeper().sleep(config.backoff().delay(failures, ThreadLocalRandom.current()));
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    } finally {
      settleAtStop();
    }
  }

  /** One turn of the loop: settle, release, claim, send or wait. */
  private void turn() throws InterruptedException {
    if (flying != null && (lanes.releasePending() || !lanes.valid())) {
      // a lane is never handed over (nor a lapsed lease renewed) with one of its rows in flight
      InFlight done = flying;
      flying = null;
      failures = afterSettling(settle(done, done.pending().outcomes()), failures);
      return;
    }
    lanes.applyReleases();
    LaneOwnership.Ownership own = lanes.current();
    if (!lanes.valid(own)) {
      store.awaitWork(config.pollInterval());
      return;
    }
    // before every claim: a fencing publisher sets up each new lease here (fencing the lane's
    // earlier owners), so every row it sends was claimed, under the epoch, after that
    publisher.lanesOwned(List.copyOf(own.leases().values()));
    Collection<LaneLease> leases = own.leases().values();
    long c0 = ticker.nanos();
    List<OutboxRecord> batch =
        store.claim(
            owner, leases, config.batchSize(), flying == null ? Set.of() : flying.positions());
    claimNanos = ticker.nanos() - c0;
    if (!batch.isEmpty()) {
      graceEnds = ticker.deadlineIn(config.idleGrace());
      graceStepNanos = GRACE_FIRST_STEP_NANOS;
      if (idle) {
        store.markIdle(owner, false); // busy: writers need not notify while we drain
        idle = false;
      }
    }
    if (flying != null) {
      InFlight done = flying;
      flying = null;
      if (!batch.isEmpty() && publisher.pipelinesInOrder() && lanes.valid()) {
        flying = send(leases, batch, done); // n+1 goes out behind n, before n's outcomes
      }
      List<PublishOutcome> outcomes = done.pending().outcomes();
      if (!allAcknowledged(outcomes)) {
        abandon(); // n+1, if sent behind n, is not marked: its rows go again after n's
      } else if (flying == null && !batch.isEmpty() && lanes.valid()) {
        flying = send(leases, batch, null); // n+1 goes out while n is marked
      }
      failures = afterSettling(settle(done, outcomes), failures);
      if (flying != null || !batch.isEmpty()) {
        return; // sent, or dropped unsent after a failure or a lapsed lease: claim again
      }
    }
    if (batch.isEmpty()) {
      idleTurn(leases);
      return;
    }
    if (!lanes.valid()) {
      return; // our lease may have lapsed while we claimed: do not publish on a stale lease
    }
    flying = send(leases, batch, null);
  }

  /** Nothing to claim: purge when due, mark the instance idle, or wait for work. */
  private void idleTurn(Collection<LaneLease> leases) throws InterruptedException {
    if (ticker.reached(nextPurge)) {
      purge(leases);
      nextPurge = ticker.deadlineIn(config.purgeInterval());
    }
    if (!idle && !ticker.reached(graceEnds)) {
      // a lull in a steady trickle: claim again shortly rather than flip to idle and back (an
      // idle mark is a write, and while we are idle every writer's transaction notifies, which
      // PostgreSQL serialises through commit)
      config.sleeper().sleep(Duration.ofNanos(graceStepNanos));
      graceStepNanos = Math.min(graceStepNanos * 2, GRACE_MAX_STEP_NANOS);
      return;
    }
    if (!idle) {
      // from now on writers wake us; claim once more for rows committed before the mark
      store.markIdle(owner, true);
      idle = true;
      return;
    }
    store.awaitWork(config.pollInterval());
  }

  /**
   * Whether batch n+1 may be sent before n is marked: only if every row of n was acknowledged.
   * After a transient failure n+1 waits behind the retry; after an unpublishable row, n+1 (claimed
   * before the row was marked) may hold later rows of its key or topic, so it is dropped unsent and
   * claimed again once the row holds them.
   */
  private static boolean allAcknowledged(List<PublishOutcome> outcomes) {
    for (PublishOutcome o : outcomes) {
      if (o instanceof PublishOutcome.Failed) {
        return false;
      }
    }
    return true;
  }

  /** Backs off after a transient failure; returns the new count of consecutive failures. */
  private int afterSettling(boolean transientFailure, int failures) throws InterruptedException {
    if (!transientFailure) {
      return 0;
    }
    config.sleeper().sleep(config.backoff().delay(failures + 1, ThreadLocalRandom.current()));
    return failures + 1;
  }

  /** Hands {@code batch} to the publisher, behind {@code after} (still in flight) unless null. */
  private InFlight send(Collection<LaneLease> leases, List<OutboxRecord> batch, InFlight after)
      throws InterruptedException {
    CrashPoints.hit(CrashPoints.RELAY_AFTER_CLAIM);
    List<Message> messages = new ArrayList<>(batch.size());
    List<LaneLease> messageLeases = new ArrayList<>(batch.size());
    Map<Integer, LaneLease> byLane = new java.util.HashMap<>();
    for (LaneLease l : leases) {
      byLane.put(l.lane(), l);
    }
    PublishOutcome[] decided = UnreadableRows.decide(batch);
    for (int i = 0; i < batch.size(); i++) {
      if (decided == null || decided[i] == null) {
        OutboxRecord r = batch.get(i);
        LaneLease lease = byLane.get(r.lane());
        if (lease == null) {
          throw new IllegalStateException("claimed a row of lane " + r.lane() + ", not owned");
        }
        messages.add(r.message());
        messageLeases.add(lease);
      }
    }
    long p0 = ticker.nanos();
    RelayPublisher.PendingPublish pending =
        after == null
            ? publisher.send(messages, messageLeases)
            : publisher.sendAfter(after.sent(), messages, messageLeases);
    return new InFlight(
        List.copyOf(leases),
        batch,
        pending,
        decided == null ? pending : UnreadableRows.merge(decided, pending),
        p0);
  }

  /**
   * After a failed cycle: waits for the batch in flight, if any, and leaves its rows pending (they
   * are claimed and published again).
   */
  private void abandon() {
    InFlight was = flying;
    flying = null;
    if (was != null) {
      try {
        was.pending().outcomes();
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException ignored) {
        // its rows stay pending either way
      }
    }
  }

  /** At stop: marks the batch in flight, so a clean stop leaves nothing to republish. */
  private void settleAtStop() {
    if (flying == null || Thread.currentThread().isInterrupted()) {
      return;
    }
    try {
      settle(flying, flying.pending().outcomes());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      log.warn(
          "relay {}: marking the last batch at stop failed; its rows are published again",
          config.instanceId(),
          e);
    }
  }

  /**
   * Marks the outcome of one batch whose publish is complete; returns whether a transient failure
   * occurred.
   */
  private boolean settle(InFlight done, List<PublishOutcome> outcomes) {
    List<OutboxRecord> batch = done.batch();
    long p1 = ticker.nanos();
    if (outcomes.size() != batch.size()) {
      throw new IllegalStateException(
          "publisher returned " + outcomes.size() + " outcomes for " + batch.size() + " messages");
    }
    Settlement s = Settlement.of(batch, outcomes);
    Set<Integer> fenced = new java.util.TreeSet<>();
    for (Settlement.Failure f : s.failures()) {
      meters.publishFailed();
      listener.onPublishFailed(f.row(), f.outcome().error(), f.outcome().permanent());
      if (f.outcome().error() instanceof LaneFencedException) {
        fenced.add(f.row().lane());
      }
    }
    if (!fenced.isEmpty()) {
      // the broker says another relay owns these lanes: give them up now (fenced by epoch), so
      // they are acquired again under a new epoch rather than held and failed
      lanes.loseLanes(fenced);
    }
    CrashPoints.hit(CrashPoints.RELAY_AFTER_ACK_BEFORE_MARK);
    if (!s.acked().isEmpty()) {
      markPublished(done, s, p1);
    }
    for (Settlement.Failure f : s.unpublishable()) {
      if (unpublishableRows.mark(owner, done.leases(), f.row(), f.outcome())) {
        meters.permanentFailure();
      }
    }
    if (s.retried() > 0) {
      log.warn(
          "relay {}: {} of {} rows not acknowledged; retrying with backoff",
          config.instanceId(),
          s.retried(),
          batch.size());
    }
    return s.retried() > 0;
  }

  private void markPublished(InFlight done, Settlement s, long p1) {
    List<OutboxRecord> acked = s.acked();
    int marked =
        store.markPublished(owner, done.leases(), acked, s.acks(), config.retention().isZero());
    CrashPoints.hit(CrashPoints.RELAY_AFTER_MARK);
    meters.batchTimed(
        done.batch().size(),
        java.time.Duration.ofNanos(claimNanos),
        java.time.Duration.ofNanos(p1 - done.sentNanos()),
        ticker.elapsedSince(p1));
    meters.batchMarked(acked.size(), marked);
    if (marked < acked.size()) {
      log.warn(
          "relay {}: {} of {} acknowledged rows not marked: lane lease lost to another instance",
          config.instanceId(),
          acked.size() - marked,
          acked.size());
      listener.onFenced(acked.size(), marked);
    }
    listener.onPublished(acked);
  }

  private void purge(Collection<LaneLease> leases) {
    if (config.retention().isZero()) {
      return;
    }
    int n;
    do {
      n = store.purgePublished(leases, config.retention(), PURGE_CHUNK);
    } while (n == PURGE_CHUNK && running.getAsBoolean());
  }
}
