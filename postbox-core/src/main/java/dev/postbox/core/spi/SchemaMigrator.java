package dev.postbox.core.spi;

import javax.sql.DataSource;

/**
 * Creates or updates Postbox's tables in a data source's current schema. {@code postbox-jdbc}
 * implements it (with Flyway) and registers itself in {@code
 * META-INF/services/dev.postbox.core.spi.SchemaMigrator}, so tools that only know core (the test
 * kit's {@code @PostboxTest(migrate = true)}, a framework starter) can migrate a schema without a
 * compile-time dependency on the store module.
 *
 * <p>Found with {@link java.util.ServiceLoader}. Implementations must have a public no-argument
 * constructor, be thread-safe and idempotent.
 */
public interface SchemaMigrator {

  /** Applies every pending migration; returns how many were applied. */
  int migrate(DataSource dataSource);
}
