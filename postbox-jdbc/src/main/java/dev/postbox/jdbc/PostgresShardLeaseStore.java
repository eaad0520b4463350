package dev.postbox.jdbc;

import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.jdbc.internal.PostgresShardLeases;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The {@link ShardLeaseStore} on PostgreSQL: members in {@code postbox_shard_member}, leases in
 * {@code postbox_shard_lease} (migration V19), deadlines on the database's clock. Give it to a
 * subscriber (RabbitMQ: {@code RabbitSubscriber.builder(...).shardLeases(...)}) so that its
 * instances share the subscription's shards. Failures throw {@link OutboxException}.
 *
 * <p>No options (so no defaults). Thread-safe.
 */
public final class PostgresShardLeaseStore {

  private PostgresShardLeaseStore() {}

  /**
   * A shard lease store on {@code dataSource}; checks that its tables exist in the data source's
   * current schema.
   *
   * @throws OutboxException if they do not (run {@link PostboxMigrations#migrate} first) or the
   *     database cannot be reached
   */
  public static ShardLeaseStore create(DataSource dataSource) {
    return new PostgresShardLeases(Objects.requireNonNull(dataSource, "dataSource"));
  }
}
