package dev.postbox.core.spi;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Leases on the shards of a consumer group, so that the instances of one subscription share its
 * shards instead of all consuming all of them: each instance heartbeats, sees the live members and
 * who holds which shard, takes free shards up to its share and gives up the rest. {@code
 * postbox-jdbc} implements it for PostgreSQL ({@code PostgresShardLeaseStore}).
 *
 * <p>A lease only balances the work: it does not fence. The transport must itself keep a shard to
 * one active consumer (RabbitMQ: single active consumer on each shard queue), so a member that lost
 * its lease without knowing it (paused, cut off from the store) costs balance, never order.
 *
 * <p>Deadlines are computed on the store's clock (the database's), so members on machines with
 * skewed clocks agree. Implementations must be thread-safe.
 */
public interface ShardLeaseStore {

  /**
   * Records that {@code member} of {@code group} is alive, forgets the members not seen within
   * {@code ttl}, extends the leases {@code member} holds by {@code ttl}, and returns the group as
   * it is then.
   */
  Group heartbeat(String group, String member, Duration ttl);

  /**
   * Takes those of {@code shards} that nobody holds, whose lease expired, or that {@code member}
   * holds already, for {@code ttl}; returns the shards {@code member} holds of them now.
   */
  Set<Integer> acquire(String group, String member, Collection<Integer> shards, Duration ttl);

  /** Gives up {@code member}'s leases on {@code shards}, so that another member can take them. */
  void release(String group, String member, Collection<Integer> shards);

  /** Removes {@code member} from {@code group} and releases all its leases (a clean shutdown). */
  void unregister(String group, String member);

  /**
   * A group as one heartbeat saw it.
   *
   * @param members the live members (seen within the TTL), sorted
   * @param holders the member holding each shard whose lease has not expired
   */
  record Group(List<String> members, Map<Integer, String> holders) {
    public Group {
      members = List.copyOf(members);
      holders = Map.copyOf(holders);
    }
  }
}
