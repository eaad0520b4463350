package dev.postbox.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * Creates and upgrades Postbox's tables ({@code postbox_*}) in the current schema of a PostgreSQL
 * database.
 *
 * <p>The migrations are plain SQL files on the class path under {@value #LOCATION}; {@link
 * #migrate(DataSource)} applies them with Flyway, keeping its history in {@value #HISTORY_TABLE}
 * (separate from the application's own Flyway history). Teams that apply SQL by hand can read the
 * scripts with {@link #scripts()} and run them in order.
 *
 * <p>Thread-safe (stateless).
 */
public final class PostboxMigrations {

  /** Class-path location of the PostgreSQL migrations. */
  public static final String LOCATION = "db/postbox/postgresql";

  /** Flyway history table used by Postbox. */
  public static final String HISTORY_TABLE = "postbox_schema_history";

  private static final List<String> SCRIPTS =
      List.of(
          "V1__outbox.sql",
          "V2__inbox.sql",
          "V3__dead_letters.sql",
          "V4__parking.sql",
          "V5__inbox_payload_fingerprint.sql",
          "V6__outbox_published_position.sql",
          "V7__notify_only_idle_relays.sql",
          "V8__static_notify_check.sql",
          "V9__outbox_unpublishable_holds.sql",
          "V10__inbox_stored_result.sql",
          "V11__consumer_offsets.sql",
          "V12__operations.sql",
          "V13__cdc_slot_lease.sql",
          "V15__console_reveal_audit.sql",
          "V16__inbox_keys_lead_with_id_and_time.sql",
          "V17__header_text_never_fails.sql",
          "V18__console_security_audit.sql",
          "V19__shard_leases.sql",
          "V20__replay_jobs.sql",
          "V21__consumer_ages.sql");

  private PostboxMigrations() {}

  /**
   * Applies every pending migration in the data source's current schema (as given by {@code
   * current_schema()}, which follows the connection's {@code search_path}). Idempotent. Returns the
   * number of migrations applied.
   */
  public static int migrate(DataSource dataSource) {
    return flyway(dataSource, "latest").migrate().migrationsExecuted;
  }

  /**
   * Applies the pending migrations up to and including {@code version} (the number after the {@code
   * V} of a script's name), as {@link #migrate(DataSource)} does: for a staged upgrade, where the
   * migrations before one that must wait for a maintenance window are applied first. Returns the
   * number of migrations applied; none when the schema is at {@code version} or later already.
   *
   * @throws IllegalArgumentException if no migration has that version
   */
  public static int migrateTo(DataSource dataSource, int version) {
    if (!versions().contains(version)) {
      throw new IllegalArgumentException(
          "no Postbox migration has version " + version + "; the versions are " + versions());
    }
    return flyway(dataSource, Integer.toString(version)).migrate().migrationsExecuted;
  }

  /** The version of the last migration (the schema version {@link #migrate} leaves). */
  public static int latestVersion() {
    return versions().getLast();
  }

  private static List<Integer> versions() {
    return SCRIPTS.stream()
        .map(name -> Integer.parseInt(name.substring(1, name.indexOf("__"))))
        .toList();
  }

  private static Flyway flyway(DataSource dataSource, String target) {
    String schema;
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_schema()")) {
      rs.next();
      schema = rs.getString(1);
    } catch (SQLException e) {
      throw new OutboxException("could not read the current schema before migrating", e);
    }
    if (schema == null) {
      throw new OutboxException(
          "the connection has no current schema (search_path names no existing schema)", null);
    }
    var config =
        Flyway.configure(PostboxMigrations.class.getClassLoader())
            .dataSource(dataSource)
            .locations("classpath:" + LOCATION)
            .table(HISTORY_TABLE)
            .schemas(schema)
            .defaultSchema(schema)
            .createSchemas(false)
            .baselineOnMigrate(true)
            .baselineVersion("0")
            .target(target);
    return config.load();
  }

  /** The migration scripts in the order they must be applied: file name and SQL text. */
  public static List<Script> scripts() {
    return SCRIPTS.stream().map(PostboxMigrations::load).toList();
  }

  /** One migration script. */
  public record Script(String name, String sql) {}

  private static Script load(String name) {
    String path = LOCATION + "/" + name;
    try (InputStream in = PostboxMigrations.class.getClassLoader().getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("missing migration on the class path: " + path);
      }
      return new Script(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
