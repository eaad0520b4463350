package dev.postbox.jdbc;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.internal.PendingRows;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.ToDoubleFunction;
import javax.sql.DataSource;

/**
 * Reads what waits in the Postbox tables, from outside any relay or consumer: pending outbox rows
 * and the age of the oldest (relay lag as time), whether the outbox is stuck, rows the relay gave
 * up on and those that hold their key behind them, pending dead letters and parked messages with
 * the age of the oldest. It keeps working while every relay and consumer is stopped, which is
 * exactly when these numbers matter.
 *
 * <pre>{@code
 * OperationsProbe probe = OperationsProbe.postgres(dataSource).bindTo(metrics);
 * OperationsProbe.Snapshot now = probe.snapshot();
 * }</pre>
 *
 * <p>One SQL statement per reading, on indexes (the outbox's pending and failed partial indexes,
 * the dead letters' status index); the parked table is read whole (it holds only failing keys).
 * Ages are measured on the database's clock. Gauges bound with {@link #bindTo} share one reading
 * that is refreshed when older than the cache time, so one scrape costs one statement.
 *
 * <p>Defaults: the data source's current schema; stuck threshold 60 s; cache 1 s. Thread-safe.
 */
public final class OperationsProbe {

  // Whether any row failed (holds), on the partial index postbox_outbox_failed (_holding) whatever
  // the statistics: a bare "failed_at IS NOT NULL" is planned as a scan of the whole outbox before
  // its first ANALYZE (the planner takes most rows to match); an ordered scan with a limit stays on
  // the index. The rows are counted only when there are some.
  static final String ANY_FAILED =
      "EXISTS (SELECT 1 FROM (SELECT failed_at FROM postbox_outbox WHERE failed_at IS NOT NULL"
          + " ORDER BY failed_at LIMIT 1) f)";

  static final String ANY_HOLD =
      "EXISTS (SELECT 1 FROM (SELECT position FROM postbox_outbox WHERE hold IS NOT NULL"
          + " ORDER BY position LIMIT 1) h)";

  static final String READ =
      "SELECT"
          + " (SELECT count(*) FROM postbox_outbox WHERE "
          + PendingRows.CONDITION
          + "),"
          + " (SELECT extract(epoch FROM clock_timestamp() - created_at) FROM postbox_outbox"
          + "   WHERE "
          + PendingRows.CONDITION
          + " ORDER BY position LIMIT 1),"
          + " (SELECT CASE WHEN "
          + ANY_FAILED
          + " THEN (SELECT count(*) FROM postbox_outbox WHERE failed_at IS NOT NULL) ELSE 0 END),"
          + " (SELECT count(*) FROM postbox_dead_letter WHERE status = 'PENDING'),"
          + " (SELECT extract(epoch FROM clock_timestamp() - first_failure) FROM postbox_dead_letter"
          + "   WHERE status = 'PENDING' ORDER BY first_failure, id LIMIT 1),"
          + " (SELECT count(*) FROM postbox_parked),"
          + " (SELECT count(DISTINCT (consumer, msg_key)) FROM postbox_parked),"
          + " (SELECT extract(epoch FROM clock_timestamp() - min(parked_at)) FROM postbox_parked),"
          // the holding rows, and the pending rows behind them, are counted only while some row
          // holds (the CASE skips both scans)
          + " (SELECT CASE WHEN "
          + ANY_HOLD
          + " THEN (SELECT count(*) FROM postbox_outbox WHERE hold IS NOT NULL) ELSE 0 END),"
          + " (SELECT CASE WHEN "
          + ANY_HOLD
          + "   THEN (SELECT count(*) FROM postbox_outbox o"
          + "     WHERE "
          + PendingRows.condition("o")
          + " AND EXISTS (SELECT 1"
          + "       FROM postbox_outbox h WHERE h.hold IS NOT NULL"
          + "       AND ((h.hold = 'TOPIC' AND h.topic = o.topic)"
          + "         OR (h.msg_key = o.msg_key AND h.position < o.position))))"
          + "   ELSE 0 END)";

  // The CDC relays' slots, from their lease rows (V13) and pg_replication_slots.
  private static final String CDC_SLOTS =
      "SELECT l.slot_name, s.slot_name IS NOT NULL, coalesce(s.active, false), %s,"
          + " CASE WHEN s.slot_name IS NULL THEN -1"
          + "   ELSE greatest(0, pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)) END,"
          + " extract(epoch FROM clock_timestamp() - l.behind_since), %s, l.slot_recoveries"
          + " FROM postbox_cdc_slot l LEFT JOIN pg_replication_slots s ON s.slot_name = l.slot_name"
          + "   AND s.database = current_database() ORDER BY l.slot_name";

  /**
   * One reading.
   *
   * @param outboxPending outbox rows neither published nor failed
   * @param outboxOldestPendingAge age of the oldest of them (zero when none)
   * @param outboxStuck whether that age exceeds the stuck threshold
   * @param outboxFailed rows the relay marked failed for good
   * @param deadLettersPending dead letters neither replayed nor discarded
   * @param deadLettersOldestAge time since the first failure of the oldest of them (zero when none)
   * @param parkedMessages messages waiting in ordered parking
   * @param parkedKeys keys (per consumer) with a parked sequence
   * @param parkedOldestAge time since the oldest parked message was parked (zero when none)
   * @param outboxHolding unpublishable rows that hold the later rows of their key or their topic
   *     until an operator retries or skips them ({@link OutboxOperations})
   * @param outboxHeld pending rows waiting behind such a row (counted in {@code outboxPending} too)
   */
  public record Snapshot(
      long outboxPending,
      Duration outboxOldestPendingAge,
      boolean outboxStuck,
      long outboxFailed,
      long deadLettersPending,
      Duration deadLettersOldestAge,
      long parkedMessages,
      long parkedKeys,
      Duration parkedOldestAge,
      long outboxHolding,
      long outboxHeld) {}

  private final DataSource dataSource;
  private final Duration stuckThreshold;
  private final Duration cacheFor;
  private final Ticker ticker;
  private final ReentrantLock lock = new ReentrantLock();
  private Snapshot cached; // guarded by lock
  private long cachedAtNanos; // guarded by lock
  private java.util.List<CdcSlotState> cachedSlots; // guarded by lock
  private long slotsCachedAtNanos; // guarded by lock
  private final java.util.Set<String> cdcSlotNames;

  private OperationsProbe(
      DataSource dataSource,
      Duration stuckThreshold,
      Duration cacheFor,
      Ticker ticker,
      java.util.Set<String> cdcSlotNames) {
    this.cdcSlotNames = java.util.Set.copyOf(cdcSlotNames);
    this.dataSource = dataSource;
    this.stuckThreshold = stuckThreshold;
    this.cacheFor = cacheFor;
    this.ticker = ticker;
  }

  /** A probe of the Postbox tables in {@code dataSource}'s current schema, with the defaults. */
  public static OperationsProbe postgres(DataSource dataSource) {
    return builder(dataSource).build();
  }

  /** A builder for a probe of {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * Reads the tables now.
   *
   * @throws OutboxException if the database fails
   */
  public Snapshot snapshot() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(READ);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      Duration outboxAge = seconds(rs.getDouble(2));
      return new Snapshot(
          rs.getLong(1),
          outboxAge,
          outboxAge.compareTo(stuckThreshold) > 0,
          rs.getLong(3),
          rs.getLong(4),
          seconds(rs.getDouble(5)),
          rs.getLong(6),
          rs.getLong(7),
          seconds(rs.getDouble(8)),
          rs.getLong(9),
          rs.getLong(10));
    } catch (SQLException e) {
      throw new OutboxException("reading the Postbox tables for metrics failed", e);
    }
  }

  /**
   * Reads the CDC relays' replication slots now (those with a lease row in {@code
   * postbox_cdc_slot}): lag in bytes and as age, whether streamed, whether lost. Empty when no CDC
   * relay ever ran on this schema.
   *
   * @throws OutboxException if the database fails
   */
  public java.util.List<CdcSlotState> cdcSlots() {
    try (Connection c = dataSource.getConnection()) {
      boolean pg13 = c.getMetaData().getDatabaseMajorVersion() >= 13;
      try (PreparedStatement exists =
              c.prepareStatement("SELECT to_regclass('postbox_cdc_slot') IS NOT NULL");
          ResultSet e = exists.executeQuery()) {
        e.next();
        if (!e.getBoolean(1)) {
          return java.util.List.of();
        }
      }
      String sql =
          String.format(
              CDC_SLOTS,
              pg13 ? "s.wal_status" : "NULL::text",
              pg13 ? "s.safe_wal_size" : "NULL::bigint");
      java.util.List<CdcSlotState> slots = new java.util.ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(sql);
          ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          long lag = rs.getLong(5);
          long safe = rs.getLong(7);
          boolean safeKnown = !rs.wasNull();
          slots.add(
              new CdcSlotState(
                  rs.getString(1),
                  rs.getBoolean(2),
                  rs.getBoolean(3),
                  java.util.Optional.ofNullable(rs.getString(4)),
                  lag,
                  lag == 0 ? Duration.ZERO : seconds(rs.getDouble(6)),
                  safeKnown ? java.util.Optional.of(safe) : java.util.Optional.empty(),
                  rs.getLong(8)));
        }
      }
      return slots;
    } catch (SQLException e) {
      throw new OutboxException("reading the CDC relay's replication slots failed", e);
    }
  }

  /**
   * Registers the {@code postbox.outbox.*}, {@code postbox.deadletters.*} and {@code
   * postbox.parked.*} gauges (no tags), and the {@code postbox.cdc.slot.*} gauges (tag {@code
   * slot}) of the CDC relay slots (see {@link Builder#cdcSlots}) on {@code metrics}; returns this
   * probe. A gauge read fails soft: NaN when the database cannot be reached.
   */
  public OperationsProbe bindTo(PostboxMetrics metrics) {
    gauge(metrics, MetricName.OUTBOX_PENDING, Snapshot::outboxPending);
    gauge(metrics, MetricName.OUTBOX_OLDEST_PENDING_AGE, s -> secs(s.outboxOldestPendingAge()));
    gauge(metrics, MetricName.OUTBOX_STUCK, s -> s.outboxStuck() ? 1 : 0);
    gauge(metrics, MetricName.OUTBOX_FAILED, Snapshot::outboxFailed);
    gauge(metrics, MetricName.OUTBOX_HOLDING, Snapshot::outboxHolding);
    gauge(metrics, MetricName.OUTBOX_HELD, Snapshot::outboxHeld);
    gauge(metrics, MetricName.DEAD_LETTERS_PENDING, Snapshot::deadLettersPending);
    gauge(metrics, MetricName.DEAD_LETTERS_OLDEST_AGE, s -> secs(s.deadLettersOldestAge()));
    gauge(metrics, MetricName.PARKED_MESSAGES, Snapshot::parkedMessages);
    gauge(metrics, MetricName.PARKED_KEYS, Snapshot::parkedKeys);
    gauge(metrics, MetricName.PARKED_OLDEST_AGE, s -> secs(s.parkedOldestAge()));
    java.util.Set<String> slots = new java.util.TreeSet<>(cdcSlotNames);
    if (slots.isEmpty()) {
      try {
        cdcSlots().forEach(s -> slots.add(s.slot()));
      } catch (OutboxException e) {
        // no CDC gauges: the database cannot be read now
      }
    }
    for (String slot : slots) {
      slotGauge(
          metrics, MetricName.CDC_SLOT_LAG, slot, s -> s.present() ? s.lagBytes() : Double.NaN);
      slotGauge(metrics, MetricName.CDC_SLOT_LAG_AGE, slot, s -> secs(s.lagAge()));
      slotGauge(metrics, MetricName.CDC_SLOT_LOST, slot, s -> s.lost() ? 1 : 0);
      slotGauge(metrics, MetricName.CDC_SLOT_RECOVERIES, slot, CdcSlotState::recoveries);
    }
    return this;
  }

  private void slotGauge(
      PostboxMetrics metrics, MetricName name, String slot, ToDoubleFunction<CdcSlotState> f) {
    metrics.gauge(
        name,
        Tags.of("slot", slot),
        () -> {
          java.util.List<CdcSlotState> all = cachedSlots();
          if (all == null) {
            return Double.NaN;
          }
          for (CdcSlotState s : all) {
            if (s.slot().equals(slot)) {
              return f.applyAsDouble(s);
            }
          }
          return name == MetricName.CDC_SLOT_LOST ? 1 : Double.NaN;
        });
  }

  /** The last slot reading if younger than the cache time, else a new one; null if it failed. */
  private java.util.List<CdcSlotState> cachedSlots() {
    lock.lock();
    try {
      if (cachedSlots == null || ticker.elapsedSince(slotsCachedAtNanos).compareTo(cacheFor) > 0) {
        try {
          cachedSlots = cdcSlots();
          slotsCachedAtNanos = ticker.nanos();
        } catch (OutboxException e) {
          cachedSlots = null;
        }
      }
      return cachedSlots;
    } finally {
      lock.unlock();
    }
  }

  private void gauge(PostboxMetrics metrics, MetricName name, ToDoubleFunction<Snapshot> f) {
    metrics.gauge(
        name,
        Tags.empty(),
        () -> {
          Snapshot s = cachedSnapshot();
          return s == null ? Double.NaN : f.applyAsDouble(s);
        });
  }

  /** The last reading if younger than the cache time, else a new one; null if the read failed. */
  private Snapshot cachedSnapshot() {
    lock.lock();
    try {
      if (cached == null || ticker.elapsedSince(cachedAtNanos).compareTo(cacheFor) > 0) {
        try {
          cached = snapshot();
          cachedAtNanos = ticker.nanos();
        } catch (OutboxException e) {
          cached = null;
        }
      }
      return cached;
    } finally {
      lock.unlock();
    }
  }

  private static Duration seconds(double s) {
    return Duration.ofNanos((long) (Math.max(0, s) * 1_000_000_000L));
  }

  private static double secs(Duration d) {
    return d.toNanos() / 1e9;
  }

  /** Builds an {@link OperationsProbe}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private Duration stuckThreshold = Duration.ofSeconds(60);
    private Duration cacheFor = Duration.ofSeconds(1);
    private Ticker ticker = Ticker.SYSTEM;
    private final java.util.Set<String> cdcSlots = new java.util.TreeSet<>();

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** Sets the age of the oldest pending row above which the outbox is stuck (default 60 s). */
    public Builder stuckThreshold(Duration threshold) {
      this.stuckThreshold = Objects.requireNonNull(threshold, "threshold");
      return this;
    }

    /** Sets how long gauges reuse one reading (default 1 s; zero reads on every gauge read). */
    public Builder cacheFor(Duration cacheFor) {
      this.cacheFor = Objects.requireNonNull(cacheFor, "cacheFor");
      return this;
    }

    /**
     * Names the CDC relay slots whose {@code postbox.cdc.slot.*} gauges {@link #bindTo} registers
     * (default: those with a lease row when {@code bindTo} runs).
     */
    public Builder cdcSlots(String... slots) {
      for (String s : slots) {
        cdcSlots.add(Objects.requireNonNull(s, "slot"));
      }
      return this;
    }

    /** Sets the monotonic time the cache is aged by (tests; default {@link Ticker#SYSTEM}). */
    Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** Validates and builds the probe. */
    public OperationsProbe build() {
      if (stuckThreshold.isNegative() || stuckThreshold.isZero()) {
        throw new IllegalArgumentException("stuckThreshold must be positive");
      }
      if (cacheFor.isNegative()) {
        throw new IllegalArgumentException("cacheFor must not be negative");
      }
      return new OperationsProbe(dataSource, stuckThreshold, cacheFor, ticker, cdcSlots);
    }
  }
}
