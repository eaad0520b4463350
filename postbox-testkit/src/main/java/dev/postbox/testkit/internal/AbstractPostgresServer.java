package dev.postbox.testkit.internal;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.testkit.PostgresServer;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/** What embedded and external servers share: URLs, schemas, pools. Thread-safe. */
abstract class AbstractPostgresServer implements PostgresServer {

  private static final Pattern SCHEMA = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]{0,62}");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String SUFFIX_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789";
  private static final int SUFFIX_LENGTH = 8;
  private static final int MAX_PREFIX = 63 - SUFFIX_LENGTH - 1;

  /** The JDBC URL of the database as given or built, without the credentials added here. */
  abstract String baseUrl();

  @Override
  public String jdbcUrl() {
    String url = baseUrl();
    url = withParam(url, "user", user());
    if (password().isPresent()) {
      url = withParam(url, "password", password().get());
    }
    return url;
  }

  @Override
  public String jdbcUrl(String schema) {
    return withParam(jdbcUrl(), "currentSchema", requireSchema(schema));
  }

  @Override
  public String createSchema(String prefix) {
    String name = schemaPrefix(prefix) + "_" + randomSuffix();
    try (Connection c = DriverManager.getConnection(jdbcUrl());
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + name);
      return name;
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create schema " + name + ": " + e.getMessage(), e);
    }
  }

  @Override
  public HikariDataSource dataSource(String schema) {
    return dataSource(schema, DEFAULT_POOL_SIZE);
  }

  @Override
  public HikariDataSource dataSource(String schema, int maxPoolSize) {
    if (maxPoolSize < 1) {
      throw new IllegalArgumentException("maxPoolSize must be >= 1, was " + maxPoolSize);
    }
    HikariConfig config = new HikariConfig();
    // PostgreSQL's default, named: left to detection, a pool whose first connection meets a
    // database
    // restart keeps isolation -1 and refuses every later connection (HikariCP #1944)
    config.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    config.setJdbcUrl(jdbcUrl(schema));
    config.setPoolName("postbox-" + schema);
    config.setMaximumPoolSize(maxPoolSize);
    config.addDataSourceProperty("ApplicationName", "postbox-" + schema);
    return new HikariDataSource(config);
  }

  @Override
  public int terminateBackends(String applicationNameLike) {
    Objects.requireNonNull(applicationNameLike, "applicationNameLike");
    String sql =
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            + " WHERE application_name LIKE ? AND pid <> pg_backend_pid()";
    try (Connection c = DriverManager.getConnection(jdbcUrl());
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, applicationNameLike);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot terminate backends: " + e.getMessage(), e);
    }
  }

  /** The schema-name form of {@code prefix}. */
  static String schemaPrefix(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    StringBuilder b = new StringBuilder();
    for (char ch : prefix.toLowerCase(Locale.ROOT).toCharArray()) {
      b.append((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ? ch : '_');
    }
    if (b.isEmpty() || Character.isDigit(b.charAt(0))) {
      b.insert(0, 's');
    }
    if (b.toString().startsWith("pg_")) {
      b.insert(0, 's'); // pg_ is reserved for system schemas
    }
    return b.length() > MAX_PREFIX ? b.substring(0, MAX_PREFIX) : b.toString();
  }

  static String requireSchema(String schema) {
    if (schema == null || !SCHEMA.matcher(schema).matches()) {
      throw new IllegalArgumentException("not a plain schema name: " + schema);
    }
    return schema;
  }

  static String withParam(String url, String name, String value) {
    return url
        + (url.indexOf('?') >= 0 ? "&" : "?")
        + name
        + "="
        + URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  private static String randomSuffix() {
    StringBuilder b = new StringBuilder(SUFFIX_LENGTH);
    for (int i = 0; i < SUFFIX_LENGTH; i++) {
      b.append(SUFFIX_CHARS.charAt(RANDOM.nextInt(SUFFIX_CHARS.length())));
    }
    return b.toString();
  }
}
