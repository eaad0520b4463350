package dev.postbox.core.spi;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Where the relay reads pending outbox rows and keeps lane ownership. {@code postbox-jdbc}
 * implements it for PostgreSQL.
 *
 * <p>Implementations must be thread-safe: the relay calls lease operations from its heartbeat
 * thread and claim/mark from its publishing thread. All lease deadlines are computed on the store's
 * clock (the database's), so relays on machines with skewed clocks agree on who owns what.
 */
public interface RelayStore {

  /** Number of lanes; fixed for the life of the store. */
  int laneCount();

  /**
   * Records that {@code instanceId} is alive, forgets instances not seen for {@code ttl}, and
   * returns how many instances are alive (at least 1).
   */
  int heartbeat(String instanceId, Duration ttl);

  /** Extends the lease of every lane {@code instanceId} still owns; returns those lanes. */
  List<LaneLease> renewLeases(String instanceId, Duration ttl);

  /**
   * Acquires up to {@code max} lanes that nobody owns or whose lease expired; returns the new
   * leases.
   */
  List<LaneLease> acquireLeases(String instanceId, int max, Duration ttl);

  /**
   * Gives up lanes (after their in-flight work is marked), so that another instance can take them
   * at once.
   */
  void releaseLeases(String instanceId, Collection<LaneLease> leases);

  /** Removes the instance and releases all its lanes (clean shutdown). */
  void unregister(String instanceId);

  /**
   * Returns up to {@code limit} pending rows of the given lanes in position order, only for lanes
   * whose lease is still held by {@code instanceId} under the given epoch.
   */
  List<OutboxRecord> claim(String instanceId, Collection<LaneLease> leases, int limit);

  /**
   * Like {@link #claim(String, Collection, int)}, leaving out the rows at {@code exceptPositions}
   * (the batch still in flight, not yet marked). The default claims {@code limit +
   * exceptPositions.size()} rows and drops those.
   */
  default List<OutboxRecord> claim(
      String instanceId,
      Collection<LaneLease> leases,
      int limit,
      java.util.Set<Long> exceptPositions) {
    if (exceptPositions.isEmpty()) {
      return claim(instanceId, leases, limit);
    }
    List<OutboxRecord> out = new java.util.ArrayList<>(limit);
    for (OutboxRecord r : claim(instanceId, leases, limit + exceptPositions.size())) {
      if (!exceptPositions.contains(r.position()) && out.size() < limit) {
        out.add(r);
      }
    }
    return out;
  }

  /**
   * Marks rows as published ({@code delete == false}) or deletes them ({@code delete == true}, for
   * a zero retention), only where {@code instanceId} still holds the row's lane under the given
   * epoch. Returns the number of rows marked or deleted.
   */
  int markPublished(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, boolean delete);

  /**
   * Like {@link #markPublished(String, Collection, List, boolean)}, also recording where each row
   * was published: {@code acks.get(i)} is the broker's acknowledgement of {@code records.get(i)}
   * (partition and offset; negative when unknown). The default ignores the acknowledgements.
   */
  default int markPublished(
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      List<RelayPublisher.PublishOutcome.Acknowledged> acks,
      boolean delete) {
    return markPublished(instanceId, leases, records, delete);
  }

  /** Marks rows as failed for good (they will not be claimed again), keeping the error text. */
  int markFailed(
      String instanceId, Collection<LaneLease> leases, List<OutboxRecord> records, String error);

  /**
   * Marks rows the publisher could not publish (see {@link
   * RelayPublisher.PublishOutcome.Failed#unpublishable()}) as failed with {@code error}, fenced
   * like {@link #markFailed}, and makes them hold what {@code hold} says: from then on {@link
   * #claim} leaves out the later rows of each row's key ({@link Hold#KEY}), also every row of its
   * topic ({@link Hold#TOPIC}), until an operator retries or skips the row; {@link Hold#NONE} only
   * skips it (the behaviour of {@link #markFailed}). Returns the number of rows marked. The default
   * ignores {@code hold} and calls {@link #markFailed}: a store that cannot hold keys skips.
   */
  default int markUnpublishable(
      String instanceId,
      Collection<LaneLease> leases,
      List<OutboxRecord> records,
      String error,
      Hold hold) {
    return markFailed(instanceId, leases, records, error);
  }

  /** What an unpublishable row holds back until an operator resolves it. */
  enum Hold {
    /** Nothing: the row is skipped and the later rows of its key go on without it. */
    NONE,
    /** The later rows of the row's key (on any topic). */
    KEY,
    /** The later rows of the row's key and every pending row of the row's topic. */
    TOPIC
  }

  /**
   * Deletes up to {@code limit} rows of the given lanes published longer than {@code retention}
   * ago.
   */
  int purgePublished(Collection<LaneLease> leases, Duration retention, int limit);

  /**
   * Blocks until new rows may be pending (a notification arrived) or {@code timeout} passed.
   * Returns whether it was woken because rows may be pending. Stores without notifications simply
   * wait. A store that wakes relays only while they are idle (see {@link #markIdle}) must also wake
   * for the writers that saw the relay busy but commit after its idle mark (PostgreSQL: it watches
   * the transactions in progress at the mark and returns when one ends).
   */
  boolean awaitWork(Duration timeout) throws InterruptedException;

  /**
   * Records whether {@code instanceId} is waiting for work ({@code idle}) or publishing. The relay
   * marks itself idle after a claim found nothing (and claims once more before it waits, so rows
   * committed before the mark are not left waiting for the poll), and busy when a claim finds rows
   * again. A store whose inserts wake relays (PostgreSQL's {@code NOTIFY}) uses it to wake them
   * only while one waits: a notification serialises the writers' commits. Default: does nothing.
   */
  default void markIdle(String instanceId, boolean idle) {}

  /**
   * The rows waiting to be published in all lanes and the age of the oldest (on the store's clock),
   * for metrics; sampled by the relay's heartbeat, so it must be cheap (PostgreSQL reads the
   * pending index). Empty when the store cannot tell (the default).
   */
  default Optional<Backlog> backlog() {
    return Optional.empty();
  }

  /**
   * Pending outbox rows.
   *
   * @param pending rows neither published nor failed
   * @param oldestAge age of the oldest of them, zero when there are none
   */
  record Backlog(long pending, Duration oldestAge) {}
}
