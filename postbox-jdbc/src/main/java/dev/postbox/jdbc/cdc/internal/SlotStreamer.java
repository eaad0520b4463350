package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.Backoff;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns the replication connection: takes the slot (or waits as a standby while another connection
 * holds it), reads and decodes the stream, registers each committed transaction with the {@link
 * CommitTracker} and queues its rows for the {@link PublishLoop}, and confirms to the slot the
 * position the tracker allows ({@code setFlushedLSN}/{@code setAppliedLSN}, then {@code
 * forceUpdateStatus}), so the server may recycle WAL before it.
 *
 * <p>Only the holder of the slot's {@link SlotLease} streams: a standby tries to take the lease
 * every standby interval and gets it once the holder let go (a clean stop) or did not renew it
 * within its TTL (it crashed, or was paused); it then ends the ex-owner's walsender, which a paused
 * process keeps open until PostgreSQL's {@code wal_sender_timeout}, and streams from the slot's
 * confirmed position. A streamer whose lease is gone stops reading and confirming at once and
 * stands by. After a broken connection under the same lease this process resumes at the end of the
 * last transaction it already holds. Runs on one thread; {@link #active()} and {@link
 * #stopReading()} from any.
 */
public final class SlotStreamer {

  private static final Logger log = LoggerFactory.getLogger(SlotStreamer.class);
  private static final Duration MAX_IDLE_WAIT = Duration.ofMillis(5);

  /**
   * Least time between two confirmations while streaming: a confirmation is a status message the
   * walsender handles, and one per transaction (a thousand a second at 1,000 transactions/s) cost
   * CPU on both sides for nothing. Confirming is for the slot's WAL retention and the restart
   * position, never on a row's way to the broker; a crash can only find the slot up to this much
   * further behind, whose rows are published again (duplicates, as after any crash).
   */
  private static final Duration CONFIRM_SPACING = Duration.ofMillis(20);

  private final ReplicationSetup setup;
  private final PgOutputDecoder decoder;
  private final SlotLease lease;
  private final SlotRecovery recovery;
  private final AtomicReference<CommitTracker> trackers;
  private final BlockingQueue<CdcEvent> queue;
  private final Duration standbyRetry;
  private final Duration statusInterval;
  private final Backoff backoff;
  private final Sleeper sleeper;
  private final Ticker ticker;
  private final String name;
  private volatile boolean reading = true;
  private volatile boolean stopped;
  private volatile boolean active;
  private volatile long confirmed;
  private CommitTracker tracker;
  private long epoch;
  private long resumeFrom;
  // the streaming thread's own: failed attempts in a row, and whether it said it stands by
  private int failures;
  private boolean standbyLogged;
  private long lastStatus;

  public SlotStreamer(
      String name,
      ReplicationSetup setup,
      PgOutputDecoder decoder,
      SlotLease lease,
      SlotRecovery recovery,
      AtomicReference<CommitTracker> trackers,
      BlockingQueue<CdcEvent> queue,
      Duration standbyRetry,
      Duration statusInterval,
      Backoff backoff,
      Sleeper sleeper,
      Ticker ticker) {
    this.name = name;
    this.setup = setup;
    this.decoder = decoder;
    this.lease = lease;
    this.recovery = recovery;
    this.trackers = trackers;
    this.queue = queue;
    this.standbyRetry = standbyRetry;
    this.statusInterval = statusInterval;
    this.backoff = backoff;
    this.sleeper = sleeper;
    this.ticker = ticker;
    this.tracker = trackers.get();
    this.confirmed = tracker.confirmable();
  }

  /** Whether this instance streams the slot now (false while standby or reconnecting). */
  public boolean active() {
    return active;
  }

  /** The last position confirmed to the slot by this instance (0 if none). */
  public long confirmed() {
    return confirmed;
  }

  /** The lease epoch this instance streams under (0 while it holds none). */
  public long epoch() {
    return lease.holds(epoch) ? epoch : 0;
  }

  /** Stops reading new transactions; confirmations go on until {@link #stop()}. */
  public void stopReading() {
    reading = false;
  }

  /** Sends the last confirmation and ends {@link #run()}. */
  public void stop() {
    reading = false;
    stopped = true;
  }

  /** The streaming loop, until {@link #stop()}; lets go of the lease when it ends. */
  public void run() {
    try {
      loop();
    } finally {
      active = false;
      lease.release(epoch);
    }
  }

  private void loop() {
    while (!stopped) {
      try {
        if (holdsLease()) {
          streamOnce();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (SQLException | RuntimeException e) {
        active = false;
        decoder.reset();
        if (stopped) {
          return;
        }
        failures++;
        log.warn(
            "CDC relay {}: replication stream failed (attempt {}); reconnecting",
            name,
            failures,
            e);
        try {
          sleeper.sleep(backoff.delay(failures, ThreadLocalRandom.current()));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /**
   * Whether this instance holds the slot's lease, taking it over when it is free; otherwise it
   * waits a while (stopping, or another instance holds it) and says no.
   */
  private boolean holdsLease() throws SQLException, InterruptedException {
    if (lease.holds(epoch)) {
      return true;
    }
    if (!reading) {
      sleeper.sleep(MAX_IDLE_WAIT); // stopping: take no lease
      return false;
    }
    Optional<SlotLease.Acquired> acquired = lease.tryAcquire();
    if (acquired.isEmpty()) {
      if (!standbyLogged) {
        log.info("CDC relay {}: another instance holds the slot's lease; standing by", name);
        standbyLogged = true;
      }
      failures = 0;
      sleeper.sleep(standbyRetry);
      return false;
    }
    standbyLogged = false;
    takeOver(acquired.get());
    return true;
  }

  /**
   * One replication connection: starts the stream at {@code resumeFrom} and streams until it ends;
   * a lost slot is recreated (and its events republished), a slot still in use by the ex-owner's
   * walsender is waited for.
   */
  private void streamOnce() throws SQLException, InterruptedException {
    try (Connection c = setup.openReplicationConnection()) {
      PGReplicationStream stream;
      try {
        stream = setup.startStream(c, resumeFrom);
      } catch (SQLException e) {
        if (!ReplicationSetup.SLOT_IN_USE.equals(e.getSQLState())) {
          Optional<String> lost = setup.lostReason();
          if (lost.isEmpty()) {
            throw e;
          }
          recovery.recreate(epoch, lost.get(), true);
          newTracker();
          recovery.republish(epoch, queue, () -> reading && !stopped);
          return;
        }
        // the ex-owner's walsender is still going away (or was never ended: try again)
        lease.endOtherWalsenders();
        sleeper.sleep(MAX_IDLE_WAIT.multipliedBy(20));
        return;
      }
      failures = 0;
      active = true;
      log.info(
          "CDC relay {}: streaming the slot (lease epoch {}) from {}",
          name,
          epoch,
          resumeFrom > 0 ? LogSequenceNumber.valueOf(resumeFrom) : "its confirmed position");
      try {
        stream(stream);
      } finally {
        active = false;
        decoder.reset();
        try {
          stream.close();
        } catch (SQLException e) {
          log.debug("closing the replication stream", e);
        }
      }
    }
  }

  /**
   * A new lease: ends the ex-owner's walsender (a paused owner's connection stays open until
   * PostgreSQL's {@code wal_sender_timeout}; after this it can confirm nothing), and starts a new
   * tracker at the slot's confirmed position, so everything after it is streamed again.
   */
  private void takeOver(SlotLease.Acquired acquired) throws SQLException, InterruptedException {
    epoch = acquired.epoch();
    lease.endOtherWalsenders();
    log.info("CDC relay {}: took the slot's lease (epoch {})", name, epoch);
    if (acquired.republishFromTable()) {
      // the previous owner was recovering a lost slot: finish its recovery first
      Optional<String> lost = setup.lostReason();
      if (lost.isPresent()) {
        recovery.recreate(epoch, lost.get(), false);
      }
      newTracker();
      recovery.republish(epoch, queue, () -> reading && !stopped);
    }
    newTracker();
  }

  /** A tracker from the slot's confirmed position (after a take-over or a new slot). */
  private void newTracker() {
    tracker = new CommitTracker(epoch, setup.confirmedFlush());
    trackers.set(tracker);
    confirmed = tracker.confirmable();
    resumeFrom = 0;
    decoder.reset();
  }

  private void stream(PGReplicationStream stream) throws SQLException, InterruptedException {
    lastStatus = ticker.nanos();
    long idleWaitNanos = 0;
    while (!stopped) {
      if (!lease.holds(epoch)) {
        lease.lose(epoch, "not renewed in time");
        log.warn("CDC relay {}: the slot's lease is gone; letting go of the stream", name);
        return; // nothing confirmed: the successor streams from the slot's confirmed position
      }
      if (!reading) {
        confirm(stream, tracker.confirmable(), true);
        sleeper.sleep(MAX_IDLE_WAIT);
        continue;
      }
      ByteBuffer message = stream.readPending();
      if (message == null) {
        long lsn =
            decoder.inTransaction()
                ? tracker.confirmable()
                : tracker.idle(stream.getLastReceiveLSN().asLong());
        confirm(stream, lsn, false);
        idleWaitNanos = Math.min(Math.max(idleWaitNanos * 2, 250_000), MAX_IDLE_WAIT.toNanos());
        sleeper.sleep(Duration.ofNanos(idleWaitNanos));
        continue;
      }
      idleWaitNanos = 0;
      Optional<CdcTransaction> tx = decoder.decode(message);
      if (tx.isPresent()) {
        enqueue(stream, tx.get());
      }
    }
    confirm(stream, tracker.confirmable(), true);
  }

  private void enqueue(PGReplicationStream stream, CdcTransaction tx)
      throws SQLException, InterruptedException {
    List<OutboxRecord> records = tx.records();
    tracker.received(tx.commitLsn(), tx.endLsn(), records.size(), tx.commitTime());
    for (int i = 0; i < records.size(); i++) {
      CdcEvent event = new CdcEvent(epoch, tx.commitLsn(), i, records.get(i));
      while (!queue.offer(event, 20, TimeUnit.MILLISECONDS)) {
        // the publisher is behind (or the broker is down): keep the server's timeout at bay
        confirm(stream, tracker.confirmable(), false);
        if (!reading || !lease.holds(epoch)) {
          return; // not confirmed: streamed again after a restart
        }
      }
    }
    resumeFrom = tx.endLsn();
  }

  /**
   * Confirms {@code lsn} if it moved and the last status is at least {@link #CONFIRM_SPACING} old
   * (at once if {@code now}: when stopping), and sends a status at least every status interval.
   */
  private void confirm(PGReplicationStream stream, long lsn, boolean now) throws SQLException {
    if (!lease.holds(epoch)) {
      return; // an ex-owner confirms nothing
    }
    Duration sinceStatus = ticker.elapsedSince(lastStatus);
    boolean advance = lsn > confirmed && (now || sinceStatus.compareTo(CONFIRM_SPACING) >= 0);
    if (advance) {
      LogSequenceNumber l = LogSequenceNumber.valueOf(lsn);
      stream.setFlushedLSN(l);
      stream.setAppliedLSN(l);
    }
    if (advance || sinceStatus.compareTo(statusInterval) >= 0) {
      stream.forceUpdateStatus();
      lastStatus = ticker.nanos();
      if (advance) {
        confirmed = lsn;
      }
    }
  }
}
