package dev.postbox.jdbc;

import dev.postbox.core.spi.OffsetStore;
import dev.postbox.jdbc.internal.PostgresOffsetStoreImpl;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The {@link OffsetStore} on PostgreSQL: each partition's next offset in {@code
 * postbox_consumer_offset} (migration V11), entity versions in {@code postbox_entity_version}.
 *
 * <p><b>Transactions</b> are those of {@link PostgresInboxStore}: a connection of the data source,
 * auto-commit off, the partition's row locked first ({@code INSERT ... ON CONFLICT DO NOTHING},
 * then {@code SELECT ... FOR UPDATE}), the work on that connection, the new next offset, commit. A
 * second instance applying the same partition (a zombie, or the successor of a rebalance) waits on
 * the row lock and then finds the offset taken. Failures of the store's own statements throw {@link
 * InboxException}. If a commit fails with its outcome unknown, a redelivery is still safe: if it
 * did commit, the stored offset makes the redelivery a skip.
 *
 * <p>No options (so no defaults). Thread-safe.
 */
public final class PostgresOffsetStore {

  private PostgresOffsetStore() {}

  /**
   * An offset store on {@code dataSource}; checks that its tables exist in the data source's
   * current schema.
   *
   * @throws InboxException if they do not (run {@link PostboxMigrations#migrate} first) or the
   *     database cannot be reached
   */
  public static OffsetStore create(DataSource dataSource) {
    return new PostgresOffsetStoreImpl(Objects.requireNonNull(dataSource, "dataSource"));
  }
}
