package dev.postbox.admin.internal;

import dev.postbox.admin.AdminException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A SELECT built from optional filters: only the SQL's shape depends on which are present; every
 * value is a bound parameter.
 */
final class Statement {

  /** Maps one row. */
  @FunctionalInterface
  interface RowMapper<T> {
    T map(ResultSet rs) throws SQLException;
  }

  private final StringBuilder sql;
  private final List<Object> params = new ArrayList<>();
  private String glue = " WHERE ";

  Statement(String select) {
    this.sql = new StringBuilder(select);
  }

  /** Adds {@code condition} (with its one {@code ?}) when {@code value} is present. */
  Statement where(String condition, Optional<?> value) {
    value.ifPresent(v -> where(condition, new Object[] {v}));
    return this;
  }

  /** Adds {@code condition} with its parameters. */
  Statement where(String condition, Object... values) {
    sql.append(glue).append(condition);
    glue = " AND ";
    for (Object v : values) {
      params.add(v instanceof Instant i ? Timestamp.from(i) : v);
    }
    return this;
  }

  /** Appends SQL text with its parameters (ORDER BY, LIMIT, GROUP BY ...). */
  Statement then(String text, Object... values) {
    sql.append(text);
    for (Object v : values) {
      params.add(v instanceof Instant i ? Timestamp.from(i) : v);
    }
    return this;
  }

  String sql() {
    return sql.toString();
  }

  <T> List<T> list(DataSource ds, String what, RowMapper<T> mapper) {
    try (Connection c = ds.getConnection();
        PreparedStatement ps = c.prepareStatement(sql.toString())) {
      bind(ps);
      List<T> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(mapper.map(rs));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new AdminException("reading " + what + " failed", e);
    }
  }

  /** Runs this statement (an INSERT ... SELECT, an UPDATE) on {@code c}; the rows it changed. */
  int update(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
      bind(ps);
      return ps.executeUpdate();
    }
  }

  private void bind(PreparedStatement ps) throws SQLException {
    for (int i = 0; i < params.size(); i++) {
      Object p = params.get(i);
      if (p instanceof byte[] bytes) {
        ps.setBytes(i + 1, bytes);
      } else {
        ps.setObject(i + 1, p);
      }
    }
  }

  static Instant instant(ResultSet rs, String column) throws SQLException {
    Timestamp t = rs.getTimestamp(column);
    return t == null ? null : t.toInstant();
  }

  static Optional<Instant> optionalInstant(ResultSet rs, String column) throws SQLException {
    return Optional.ofNullable(instant(rs, column));
  }

  static Duration seconds(double s) {
    return Duration.ofNanos((long) (Math.max(0, s) * 1_000_000_000L));
  }
}
