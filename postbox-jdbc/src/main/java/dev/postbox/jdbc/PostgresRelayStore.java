package dev.postbox.jdbc;

import dev.postbox.core.spi.RelayStore;
import dev.postbox.jdbc.internal.PostgresRelayStoreImpl;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The relay's view of the PostgreSQL outbox: claims pending rows by lane, marks them published,
 * keeps lane leases in {@code postbox_relay_lane}, and waits for {@code NOTIFY} on new rows.
 *
 * <p>Defaults: notifications on (one connection of the data source is held for {@code LISTEN} while
 * the relay runs; it is reopened if it breaks, and the relay polls meanwhile). Thread-safe.
 */
public final class PostgresRelayStore {

  /** Default: wait for {@code NOTIFY} on new rows (otherwise the relay only polls). */
  public static final boolean DEFAULT_NOTIFICATIONS = true;

  private PostgresRelayStore() {}

  /** A store on {@code dataSource} with notifications on. */
  public static RelayStore create(DataSource dataSource) {
    return builder(dataSource).build();
  }

  /** A builder for a store on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Builds a PostgreSQL {@link RelayStore}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private boolean notifications = DEFAULT_NOTIFICATIONS;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * Whether to wait for {@code NOTIFY} on new rows (default true); otherwise the relay only
     * polls.
     */
    public Builder notifications(boolean notifications) {
      this.notifications = notifications;
      return this;
    }

    /**
     * Builds the store; checks that the Postbox tables exist in the data source's current schema.
     */
    public RelayStore build() {
      return new PostgresRelayStoreImpl(dataSource, notifications);
    }
  }
}
