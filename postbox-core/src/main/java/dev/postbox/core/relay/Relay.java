package dev.postbox.core.relay;

import dev.postbox.core.Backoff;
import dev.postbox.core.engine.relay.RelayEngine;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * Publishes outbox rows to a broker: the relay half of the transactional outbox.
 *
 * <p><b>Guarantees.</b> A row is marked published only after the broker acknowledged it (a crash in
 * between publishes it again, with the same message id: never lost, possibly duplicated on the
 * topic). Rows of one key are published in commit order, also with several relay instances: the
 * outbox is split into lanes ({@code hash(key) mod 64}); each lane is owned by one instance at a
 * time under an expiring lease with a fencing epoch, and the owner publishes the lane's rows in
 * position order. Rows that commit out of position order are never skipped (the relay claims
 * unpublished rows; it keeps no high-water mark).
 *
 * <p><b>Threads.</b> {@link #start()} starts two threads: a publishing loop (claim, publish, mark)
 * and a heartbeat (keeps this instance registered, renews its leases, takes or gives up lanes to
 * reach its fair share {@code ceil(64 / live instances)}). Lanes are given up only between batches,
 * after their in-flight rows were marked.
 *
 * <p><b>Defaults.</b> batch size 2,000; lease TTL 10 s; heartbeat every TTL/4; poll interval 1 s
 * (the longest wait for new rows when no notification arrives); retention of published rows 1 h
 * (zero deletes them at once); purge every 30 s; backoff after a failed publish {@code 100 ms *
 * 2^n} up to 30 s with 50 % jitter; no metrics ({@link PostboxMetrics#noop()}); a pending row
 * counts as stuck after 60 s; a row that cannot be published holds its key ({@link
 * UnpublishableRows#BLOCK_KEY}); each is a {@code DEFAULT_*} constant here. Configuration is frozen
 * at {@link Builder#build()}. Thread-safe.
 */
public interface Relay extends AutoCloseable {

  /** Default most rows claimed and published in one batch. */
  int DEFAULT_BATCH_SIZE = 2_000;

  /** Default time a lane lease lasts without renewal (the failover time after a crash). */
  Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);

  /** Default longest wait for new rows when no notification arrives. */
  Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

  /**
   * Default time after the last claim that found rows during which the relay keeps claiming at
   * short intervals (1 ms, doubling up to 4 ms) before it marks itself idle and waits for a
   * notification.
   */
  Duration DEFAULT_IDLE_GRACE = Duration.ofMillis(10);

  /** Default time published rows are kept. */
  Duration DEFAULT_RETENTION = Duration.ofHours(1);

  /** Default interval between purges of published rows older than the retention. */
  Duration DEFAULT_PURGE_INTERVAL = Duration.ofSeconds(30);

  /** Default time {@link #close()} waits for the batch in flight. */
  Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

  /** Default backoff after a failed publish: 100 ms doubling up to 30 s, 50 % jitter. */
  Backoff DEFAULT_BACKOFF = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(30), 2, 0.5);

  /** Default age of the oldest pending row above which the outbox counts as stuck. */
  Duration DEFAULT_STUCK_THRESHOLD = Duration.ofSeconds(60);

  /** Default handling of a row that cannot be published: it holds its key. */
  UnpublishableRows DEFAULT_UNPUBLISHABLE_ROWS = UnpublishableRows.BLOCK_KEY;

  /** A builder for a relay reading {@code store} and publishing through {@code publisher}. */
  static Builder builder(RelayStore store, RelayPublisher publisher) {
    return new Builder(store, publisher);
  }

  /** Starts the relay's threads. May be called once. */
  void start();

  /**
   * Stops publishing, waits (up to the shutdown timeout) for the batch in flight to be marked,
   * releases all lanes and closes the publisher. Idempotent.
   */
  @Override
  void close();

  /** This instance's id in the lease table. */
  String instanceId();

  /** The lanes this instance currently owns. */
  Set<Integer> ownedLanes();

  /** Counters since start. */
  Stats stats();

  /**
   * Counters of one relay instance.
   *
   * @param published rows acknowledged by the broker and marked
   * @param publishFailures failed publish attempts (each row counted once per attempt)
   * @param permanentFailures rows marked unpublishable (failed, then holding their key or skipped)
   * @param fenced rows acknowledged but not marked because the lease was lost
   * @param batches batches published
   */
  record Stats(
      long published, long publishFailures, long permanentFailures, long fenced, long batches) {}

  /** Builds a {@link Relay}; validates at {@link #build()}. Not thread-safe. */
  final class Builder {
    private final RelayStore store;
    private final RelayPublisher publisher;
    private String instanceId;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Duration leaseTtl = DEFAULT_LEASE_TTL;
    private Duration heartbeatInterval;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration idleGrace = DEFAULT_IDLE_GRACE;
    private Duration retention = DEFAULT_RETENTION;
    private Duration purgeInterval = DEFAULT_PURGE_INTERVAL;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Backoff backoff = DEFAULT_BACKOFF;
    private Sleeper sleeper = Sleeper.SYSTEM;
    private RelayListener listener = RelayListener.NONE;
    private PostboxMetrics metrics = PostboxMetrics.noop();
    private Duration stuckThreshold = DEFAULT_STUCK_THRESHOLD;
    private UnpublishableRows unpublishableRows = DEFAULT_UNPUBLISHABLE_ROWS;

    private Builder(RelayStore store, RelayPublisher publisher) {
      this.store = Objects.requireNonNull(store, "store");
      this.publisher = Objects.requireNonNull(publisher, "publisher");
    }

    /**
     * Sets this instance's id (default: {@code <host>-<pid>-<random>}); must be unique among live
     * relays.
     */
    public Builder instanceId(String instanceId) {
      this.instanceId = instanceId;
      return this;
    }

    /** Sets the most rows claimed and published in one batch (default 2,000). */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** Sets how long a lane lease lasts without renewal (default 10 s). */
    public Builder leaseTtl(Duration leaseTtl) {
      this.leaseTtl = leaseTtl;
      return this;
    }

    /**
     * Sets how often leases are renewed and lanes rebalanced (default: lease TTL / 4). For two
     * intervals after the number of live instances changes (this one's start included) the
     * heartbeat beats 20 times as often, so a joining instance gets its share of the lanes within a
     * fraction of an interval.
     */
    public Builder heartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = heartbeatInterval;
      return this;
    }

    /**
     * Sets how long after its last claim that found rows the relay keeps claiming at short
     * intervals (1 ms, doubling up to 4 ms) before it marks itself idle and waits for a
     * notification (default 10 ms; {@link Duration#ZERO}: it marks itself idle at the first claim
     * that finds nothing). Under a steady trickle of writes the relay then stays busy, so the
     * writers' transactions do not notify (PostgreSQL serialises the commits of transactions that
     * notify) and the relay writes no idle mark per lull; a lull longer than the grace costs one to
     * four empty claims.
     */
    public Builder idleGrace(Duration idleGrace) {
      this.idleGrace = idleGrace;
      return this;
    }

    /** Sets the longest wait for new rows when no notification arrives (default 1 s). */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * Sets how long published rows are kept (default 1 h); zero deletes each row once published.
     */
    public Builder retention(Duration retention) {
      this.retention = retention;
      return this;
    }

    /** Sets how often published rows older than the retention are purged (default 30 s). */
    public Builder purgeInterval(Duration purgeInterval) {
      this.purgeInterval = purgeInterval;
      return this;
    }

    /** Sets how long {@link Relay#close()} waits for the batch in flight (default 30 s). */
    public Builder shutdownTimeout(Duration shutdownTimeout) {
      this.shutdownTimeout = shutdownTimeout;
      return this;
    }

    /** Sets the backoff after a failed publish (default 100 ms doubling to 30 s, 50 % jitter). */
    public Builder backoff(Backoff backoff) {
      this.backoff = backoff;
      return this;
    }

    /** Sets how the relay waits during backoff (default: {@link Sleeper#SYSTEM}). */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = sleeper;
      return this;
    }

    /** Sets the listener for metrics and logging (default: none). */
    public Builder listener(RelayListener listener) {
      this.listener = listener;
      return this;
    }

    /**
     * Sets where the relay reports its metrics (default: {@link PostboxMetrics#noop()}): rows
     * published, publish failures, lanes owned, and, sampled by the heartbeat, the pending rows,
     * the age of the oldest one and the stuck signal ({@code postbox.relay.*}, tag {@code
     * instance}).
     */
    public Builder metrics(PostboxMetrics metrics) {
      this.metrics = metrics;
      return this;
    }

    /**
     * Sets the age of the oldest pending row above which the relay reports the outbox as stuck
     * ({@code postbox.relay.stuck} = 1; default 60 s).
     */
    public Builder stuckThreshold(Duration stuckThreshold) {
      this.stuckThreshold = stuckThreshold;
      return this;
    }

    /**
     * Sets what happens behind a row that cannot be published (default {@link
     * UnpublishableRows#BLOCK_KEY}: its key waits, in order, until an operator retries or skips it;
     * {@link UnpublishableRows#SKIP}: the row is skipped and its key goes on).
     */
    public Builder unpublishableRows(UnpublishableRows unpublishableRows) {
      this.unpublishableRows = unpublishableRows;
      return this;
    }

    /** Validates the configuration and builds the relay (not yet started). */
    public Relay build() {
      if (batchSize < 1 || batchSize > 100_000) {
        throw new IllegalArgumentException("batchSize must be in [1, 100000], was " + batchSize);
      }
      requirePositive(leaseTtl, "leaseTtl");
      Duration hb = heartbeatInterval != null ? heartbeatInterval : leaseTtl.dividedBy(4);
      requirePositive(hb, "heartbeatInterval");
      if (hb.compareTo(leaseTtl.dividedBy(2)) > 0) {
        throw new IllegalArgumentException(
            "heartbeatInterval (" + hb + ") must be at most half the leaseTtl (" + leaseTtl + ")");
      }
      requirePositive(pollInterval, "pollInterval");
      Objects.requireNonNull(idleGrace, "idleGrace");
      if (idleGrace.isNegative() || idleGrace.compareTo(pollInterval) > 0) {
        throw new IllegalArgumentException(
            "idleGrace must be between zero and the pollInterval ("
                + pollInterval
                + "), was "
                + idleGrace);
      }
      Objects.requireNonNull(retention, "retention");
      if (retention.isNegative()) {
        throw new IllegalArgumentException("retention must not be negative, was " + retention);
      }
      requirePositive(purgeInterval, "purgeInterval");
      requirePositive(shutdownTimeout, "shutdownTimeout");
      Objects.requireNonNull(backoff, "backoff");
      Objects.requireNonNull(sleeper, "sleeper");
      Objects.requireNonNull(listener, "listener");
      Objects.requireNonNull(metrics, "metrics");
      requirePositive(stuckThreshold, "stuckThreshold");
      Objects.requireNonNull(unpublishableRows, "unpublishableRows");
      String id = instanceId != null ? instanceId : defaultInstanceId();
      if (id.isBlank()) {
        throw new IllegalArgumentException("instanceId must not be blank");
      }
      return new RelayEngine(
          new RelayEngine.Config(
              id,
              batchSize,
              leaseTtl,
              hb,
              pollInterval,
              idleGrace,
              retention,
              purgeInterval,
              shutdownTimeout,
              backoff,
              sleeper,
              listener,
              metrics,
              stuckThreshold,
              unpublishableRows,
              Ticker.SYSTEM,
              Sleeper.SYSTEM),
          store,
          publisher);
    }

    private static void requirePositive(Duration d, String name) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive, was " + d);
      }
    }

    private static String defaultInstanceId() {
      String host;
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.io.IOException e) {
        host = "host";
      }
      String pid = ManagementFactory.getRuntimeMXBean().getPid() + "";
      return host + "-" + pid + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
  }
}
