package dev.postbox.jdbc.cdc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A data source whose {@code getConnection()} waits while it is paused (a paused process). */
final class PausableDataSource implements DataSource {

  private final DataSource delegate;
  private boolean paused;

  PausableDataSource(DataSource delegate) {
    this.delegate = delegate;
  }

  synchronized void paused(boolean paused) {
    this.paused = paused;
    notifyAll();
  }

  private synchronized void awaitResumed() throws SQLException {
    try {
      while (paused) {
        wait();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLException("interrupted while paused", e);
    }
  }

  @Override
  public Connection getConnection() throws SQLException {
    awaitResumed();
    return delegate.getConnection();
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    awaitResumed();
    return delegate.getConnection(user, password);
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return delegate.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    delegate.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    delegate.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return delegate.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return delegate.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return delegate.isWrapperFor(iface);
  }
}
