package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.Backoff;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Marks the rows the CDC relay published, off the publishing thread and in batches: {@code
 * published_at} (with the broker's partition and offset, the same columns and statement shape as
 * the polling relay's mark, without its lane fence), or deletes them when the retention is zero;
 * rows the broker can never take get {@code failed_at} and the error. So the polling relay's
 * pending condition ({@code published_at IS NULL AND failed_at IS NULL}) no longer sees them, and
 * {@code OperationsProbe}, {@code MessageTracer} and retention work as for polled rows.
 *
 * <p>Only after a batch's marks committed does it tell the {@link CommitTracker} that those rows
 * are done, so the slot is never confirmed past a row that is still unmarked (a crash between the
 * two republishes the rows and marks them again: duplicates, never a row left pending for ever).
 * Also purges rows published longer ago than the retention. Thread-safe ({@link #submit} from the
 * publishing thread, {@link #run} on its own thread).
 */
public final class PublishedRowMarker {

  private static final Logger log = LoggerFactory.getLogger(PublishedRowMarker.class);

  static final String MARK_PUBLISHED =
      "UPDATE postbox_outbox o SET published_at = now(),"
          + " published_partition = nullif(a.part, -1), published_offset = nullif(a.off, -1)"
          + " FROM unnest(?::bigint[], ?::int[], ?::bigint[]) AS a(pos, part, off)"
          + " WHERE o.position = a.pos RETURNING o.position";
  static final String DELETE_PUBLISHED =
      "DELETE FROM postbox_outbox WHERE position = ANY(?::bigint[]) RETURNING position";
  static final String MARK_FAILED =
      "UPDATE postbox_outbox SET failed_at = now(), last_error = ?, attempts = attempts + 1"
          + " WHERE position = ? AND published_at IS NULL";
  static final String PURGE =
      "DELETE FROM postbox_outbox WHERE position IN (SELECT position FROM postbox_outbox"
          + " WHERE published_at < now() - make_interval(secs => ?) LIMIT ?)";
  private static final int MAX_ROWS_PER_MARK = 20_000;

  /**
   * How often rows the mark did not find are looked for again. The slot can hand out a transaction
   * a moment before its committing backend has made it visible to other sessions (PostgreSQL
   * flushes the commit record, which walsenders stream, before it leaves the proc array), so on a
   * busy machine a mark may run too early for a few of its rows.
   */
  private static final int MAX_INVISIBLE_RETRIES = 40;

  private static final int PURGE_LIMIT = 5_000;

  /**
   * What one publish attempt settled: rows acknowledged (with their acknowledgements), rows that
   * can never be published (with the error), and the last event covered, in stream order.
   */
  public record Settled(
      List<OutboxRecord> acked,
      List<PublishOutcome.Acknowledged> acks,
      List<OutboxRecord> failed,
      List<String> errors,
      CdcEvent last) {}

  private final DataSource dataSource;
  private final Supplier<CommitTracker> trackers;
  private final SlotLease lease; // null: unfenced (tests)
  private final Duration retention;
  private final Duration purgeInterval;
  private final Backoff backoff;
  private final Sleeper sleeper;
  private final Ticker ticker;
  private final Duration gather;
  private final LinkedBlockingQueue<Settled> queue = new LinkedBlockingQueue<>();
  private volatile boolean stopping;
  private volatile long marked;

  public PublishedRowMarker(
      DataSource dataSource,
      CommitTracker tracker,
      Duration retention,
      Duration purgeInterval,
      Backoff backoff,
      Sleeper sleeper,
      Ticker ticker) {
    this(
        dataSource,
        () -> tracker,
        null,
        retention,
        purgeInterval,
        backoff,
        sleeper,
        ticker,
        Duration.ZERO);
  }

  /**
   * A marker whose marks are fenced by {@code lease} (a mark of an epoch no longer held is dropped,
   * and tells no tracker) and which tells the current tracker of {@code trackers}. After the first
   * attempt it is handed, it waits {@code gather} for more before marking them all in one
   * transaction (zero: marks at once).
   */
  public PublishedRowMarker(
      DataSource dataSource,
      Supplier<CommitTracker> trackers,
      SlotLease lease,
      Duration retention,
      Duration purgeInterval,
      Backoff backoff,
      Sleeper sleeper,
      Ticker ticker,
      Duration gather) {
    this.gather = gather;
    this.dataSource = dataSource;
    this.trackers = trackers;
    this.lease = lease;
    this.retention = retention;
    this.purgeInterval = purgeInterval;
    this.backoff = backoff;
    this.sleeper = sleeper;
    this.ticker = ticker;
  }

  /** Queues a settled publish attempt for marking. */
  public void submit(Settled settled) {
    queue.add(settled);
  }

  /** Rows marked (or deleted) so far. */
  public long marked() {
    return marked;
  }

  /** Asks {@link #run} to mark what is queued and return. */
  public void stop() {
    stopping = true;
  }

  /** The marking loop; returns after {@link #stop()} once the queue is empty (or marking fails). */
  public void run() {
    long nextPurge = ticker.deadlineIn(purgeInterval);
    int failures = 0;
    List<Settled> jobs = new ArrayList<>();
    while (true) {
      try {
        if (jobs.isEmpty()) {
          Settled first = queue.poll(20, TimeUnit.MILLISECONDS);
          if (first == null) {
            if (stopping) {
              return;
            }
            if (!retention.isZero() && ticker.reached(nextPurge)) {
              purge();
              nextPurge = ticker.deadlineIn(purgeInterval);
            }
            continue;
          }
          jobs.add(first);
          if (gather.isPositive() && !stopping) {
            sleeper.sleep(gather); // more attempts settle meanwhile: one transaction marks them all
          }
          int rows = rows(first);
          Settled next;
          while (rows < MAX_ROWS_PER_MARK && (next = queue.poll()) != null) {
            jobs.add(next);
            rows += rows(next);
          }
        }
        CommitTracker tracker = trackers.get();
        jobs.removeIf(j -> j.last().epoch() != tracker.epoch()); // an ex-owner's: dropped
        if (!jobs.isEmpty()) {
          try {
            mark(jobs, tracker.epoch());
            done(tracker, jobs);
          } catch (SlotLease.StaleLeaseException stale) {
            log.warn("CDC relay: {} marks dropped: {}", jobs.size(), stale.getMessage());
          }
        }
        jobs.clear();
        failures = 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RuntimeException e) {
        failures++;
        log.warn("CDC relay: marking published rows failed (attempt {}); retrying", failures, e);
        if (stopping && failures >= 3) {
          return; // unmarked rows stay unconfirmed: published again after a restart
        }
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
   * Tells the tracker the slot rows of {@code jobs} are done (rows republished from the table after
   * a lost slot confirm no slot position).
   */
  private static void done(CommitTracker tracker, List<Settled> jobs) {
    for (int i = jobs.size() - 1; i >= 0; i--) {
      CdcEvent last = jobs.get(i).last();
      if (!last.fromTable()) {
        tracker.done(last.commitLsn(), last.index());
        break;
      }
    }
  }

  private static int rows(Settled s) {
    return s.acked().size() + s.failed().size();
  }

  private void mark(List<Settled> jobs, long epoch) throws InterruptedException {
    Map<Long, PublishOutcome.Acknowledged> acked = new LinkedHashMap<>();
    for (Settled s : jobs) {
      for (int i = 0; i < s.acked().size(); i++) {
        long position = s.acked().get(i).position();
        if (position > 0) { // an emitted message (EmitMessageOutbox) has no row to mark
          acked.put(position, s.acks().get(i));
        }
      }
    }
    Set<Long> found = markOnce(acked, jobs, epoch);
    for (int attempt = 1; found.size() < acked.size(); attempt++) {
      acked.keySet().removeAll(found);
      if (attempt > MAX_INVISIBLE_RETRIES) {
        log.warn(
            "CDC relay: {} published rows were not found to mark (first position {}); they stay"
                + " pending in the table (published: the slot moves on)",
            acked.size(),
            acked.keySet().iterator().next());
        return;
      }
      sleeper.sleep(Duration.ofMillis(Math.min(500, 5L << Math.min(attempt, 7))));
      found = markOnce(acked, List.of(), epoch);
    }
  }

  /** Marks (or deletes) {@code acked} and the failed rows of {@code jobs}; the positions found. */
  private Set<Long> markOnce(
      Map<Long, PublishOutcome.Acknowledged> acked, List<Settled> jobs, long epoch) {
    Long[] positions = acked.keySet().toArray(Long[]::new);
    Integer[] partitions = acked.values().stream().map(a -> a.partition()).toArray(Integer[]::new);
    Long[] offsets = acked.values().stream().map(a -> a.offset()).toArray(Long[]::new);
    Set<Long> found = new HashSet<>();
    Transactions.inTransaction(
        dataSource,
        "marking " + positions.length + " published outbox rows failed",
        c -> {
          if (lease != null) {
            lease.fence(c, epoch);
          }
          if (positions.length > 0) {
            boolean delete = retention.isZero();
            try (PreparedStatement ps =
                c.prepareStatement(delete ? DELETE_PUBLISHED : MARK_PUBLISHED)) {
              ps.setArray(1, c.createArrayOf("int8", positions));
              if (!delete) {
                ps.setArray(2, c.createArrayOf("int4", partitions));
                ps.setArray(3, c.createArrayOf("int8", offsets));
              }
              try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                  found.add(rs.getLong(1));
                }
              }
            }
          }
          for (Settled s : jobs) {
            for (int i = 0; i < s.failed().size(); i++) {
              if (s.failed().get(i).position() <= 0) {
                log.error(
                    "CDC relay: emitted message {} can never be published ({}); it has no outbox"
                        + " row to keep it in, so it is skipped",
                    s.failed().get(i).message().id(),
                    s.errors().get(i));
                continue;
              }
              try (PreparedStatement ps = c.prepareStatement(MARK_FAILED)) {
                ps.setString(1, s.errors().get(i));
                ps.setLong(2, s.failed().get(i).position());
                ps.executeUpdate();
              }
            }
          }
          return null;
        },
        OutboxException::new);
    marked += found.size();
    return found;
  }

  private void purge() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(PURGE)) {
      ps.setDouble(1, retention.toNanos() / 1e9);
      ps.setInt(2, PURGE_LIMIT);
      int n;
      do {
        n = ps.executeUpdate();
      } while (n == PURGE_LIMIT && !stopping);
    } catch (SQLException e) {
      log.warn("CDC relay: purging published outbox rows failed; will retry", e);
    }
  }
}
