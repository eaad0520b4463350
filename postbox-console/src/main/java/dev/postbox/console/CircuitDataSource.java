package dev.postbox.console;

import com.zaxxer.hikari.HikariDataSource;
import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The console's pool with the database's circuit ({@link Dependency}) on taking a connection: when
 * the database cannot be reached (HikariCP's short connection timeout), the circuit opens and every
 * later page gets its {@link SQLTransientConnectionException} at once instead of waiting.
 */
final class CircuitDataSource implements DataSource, AutoCloseable {

  private final HikariDataSource pool;
  private final Dependency database;

  CircuitDataSource(HikariDataSource pool, Dependency database) {
    this.pool = pool;
    this.database = database;
  }

  @Override
  public Connection getConnection() throws SQLException {
    try {
      return database.call(pool::getConnection);
    } catch (CallNotPermittedException e) {
      throw new SQLTransientConnectionException(
          "database unreachable since "
              + database.downSince().map(String::valueOf).orElse("just now")
              + " ("
              + database.lastError()
              + ")",
          "08001",
          e);
    } catch (SQLException | RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new SQLException(e);
    }
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("the console's pool has one user");
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return pool.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    pool.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    pool.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return pool.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return pool.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> type) throws SQLException {
    return type.isInstance(this) ? type.cast(this) : pool.unwrap(type);
  }

  @Override
  public boolean isWrapperFor(Class<?> type) throws SQLException {
    return type.isInstance(this) || pool.isWrapperFor(type);
  }

  @Override
  public void close() {
    pool.close();
  }
}
