package dev.postbox.jdbc;

import dev.postbox.core.spi.ParkingStore;
import dev.postbox.jdbc.internal.PostgresParkingStoreImpl;
import javax.sql.DataSource;

/**
 * Ordered parking on PostgreSQL ({@code postbox_parked}): a failing key's messages wait here in
 * order and are retried as a sequence. Thread-safe.
 */
public final class PostgresParkingStore {

  private PostgresParkingStore() {}

  /** A parking store on {@code dataSource} (the Postbox migrations must have run). */
  public static ParkingStore create(DataSource dataSource) {
    return new PostgresParkingStoreImpl(dataSource);
  }
}
