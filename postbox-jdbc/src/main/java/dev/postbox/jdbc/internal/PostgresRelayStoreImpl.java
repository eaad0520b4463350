package dev.postbox.jdbc.internal;

import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.OutboxException;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * {@link RelayStore} on PostgreSQL: checks the schema at start, then hands each call to its part —
 * {@link PostgresLaneLeases} (instances and lane leases), {@link PostgresOutboxRows} (claim, mark,
 * purge, backlog) and {@link PostgresWorkNotifier} (idle mark, LISTEN/NOTIFY, waiting for work).
 */
public final class PostgresRelayStoreImpl implements RelayStore {

  private final int laneCount;
  private final PostgresLaneLeases leases;
  private final PostgresOutboxRows rows;
  private final PostgresWorkNotifier notifier;

  public PostgresRelayStoreImpl(DataSource dataSource, boolean notifications) {
    this(dataSource, notifications, Ticker.SYSTEM, Sleeper.SYSTEM);
  }

  /** A store whose waits for work read {@code ticker} and sleep on {@code sleeper} (for tests). */
  PostgresRelayStoreImpl(
      DataSource dataSource, boolean notifications, Ticker ticker, Sleeper sleeper) {
    this.laneCount = readLaneCount(dataSource);
    this.leases = new PostgresLaneLeases(dataSource);
    this.rows = new PostgresOutboxRows(dataSource);
    this.notifier = new PostgresWorkNotifier(dataSource, notifications, ticker, sleeper);
  }

  private static int readLaneCount(DataSource dataSource) {
    int laneCount;
    try {
      laneCount =
          StartupQuery.run(
              dataSource,
              c -> {
                try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT count(*) FROM postbox_relay_lane")) {
                  rs.next();
                  return rs.getInt(1);
                }
              });
    } catch (SQLException e) {
      // only a missing table means the migrations have not run; anything else (the database
      // restarting, refusing connections) must not send the operator to migrate
      throw new OutboxException(
          "42P01".equals(e.getSQLState())
              ? "postbox_relay_lane is missing in the current schema; run"
                  + " PostboxMigrations.migrate first"
              : "cannot read postbox_relay_lane: " + e.getMessage(),
          e);
    }
    if (laneCount != Lanes.COUNT) {
      throw new IllegalStateException(
          "postbox_relay_lane holds " + laneCount + " lanes; this version needs " + Lanes.COUNT);
    }
    return laneCount;
  }

  @Override
  public int laneCount() {
    return laneCount;
  }

  @Override
  public int heartbeat(String instanceId, Duration ttl) {
    return leases.heartbeat(instanceId, ttl, notifier.idleMark(instanceId));
  }

  @Override
  public List<LaneLease> renewLeases(String instanceId, Duration ttl) {
    return leases.renew(instanceId, ttl);
  }

  @Override
  public List<LaneLease> acquireLeases(String instanceId, int max, Duration ttl) {
    return leases.acquire(instanceId, max, ttl);
  }

  @Override
  public void releaseLeases(String instanceId, Collection<LaneLease> leases) {
    this.leases.release(instanceId, leases);
  }

  @Override
  public void unregister(String instanceId) {
    try {
      leases.unregister(instanceId);
      notifier.forget(instanceId);
    } finally {
      notifier.close();
    }
  }

  @Override
  public List<OutboxRecord> claim(String instanceId, Collection<LaneLease> leases, int limit) {
    return rows.claim(instanceId, leases, limit, Set.of());
  }

  @Override
  public List<OutboxRecord> claim(
      String instanceId, Collection<LaneLease> leases, int limit, Set<Long> exceptPositions) {
    return rows.claim(instanceId, leases, limit, exceptPositions);
  }

  @Override
  public int markPublished(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, boolean delete) {
    return rows.markPublished(instanceId, leases, records, List.of(), delete);
  }

  @Override
  public int markPublished(
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      List<RelayPublisher.PublishOutcome.Acknowledged> acks,
      boolean delete) {
    return rows.markPublished(instanceId, leases, records, acks, delete);
  }

  @Override
  public int markFailed(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String error) {
    return rows.markFailed(instanceId, leases, records, error);
  }

  @Override
  public int markUnpublishable(
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      String error,
      Hold hold) {
    return rows.markUnpublishable(instanceId, leases, records, error, hold);
  }

  @Override
  public int purgePublished(Collection<LaneLease> leases, Duration retention, int limit) {
    return rows.purgePublished(leases, retention, limit);
  }

  @Override
  public Optional<Backlog> backlog() {
    return rows.backlog();
  }

  @Override
  public void markIdle(String instanceId, boolean idle) {
    notifier.markIdle(instanceId, idle);
  }

  @Override
  public boolean awaitWork(Duration timeout) throws InterruptedException {
    return notifier.awaitWork(timeout);
  }
}
