package dev.postbox.jdbc;

import dev.postbox.core.spi.SchemaMigrator;
import javax.sql.DataSource;

/**
 * {@link SchemaMigrator} by {@link PostboxMigrations#migrate(DataSource)}; found by ServiceLoader.
 */
public final class PostboxSchemaMigrator implements SchemaMigrator {

  @Override
  public int migrate(DataSource dataSource) {
    return PostboxMigrations.migrate(dataSource);
  }
}
