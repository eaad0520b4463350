package dev.postbox.jdbc.internal;

import dev.postbox.core.time.Sleeper;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import javax.sql.DataSource;

/**
 * A store's start-up query, run again on another connection when the session it was given turns out
 * to have been ended by the server. A pool hands out a connection whose session an administrator's
 * {@code pg_terminate_backend}, a fast shutdown or a failover ended while it was idle; without
 * this, a relay or consumer that starts at that moment exits with the server's "terminating
 * connection" (seen in the fault campaign). The pool discards each broken connection, so a later
 * attempt gets a live one; after a crash every idle connection of the pool is dead, so the attempts
 * are spaced (20 ms, doubling, at most 1 s apart: about 2.3 s in all) and number {@value
 * #ATTEMPTS}, more than a store's pool usually holds. A database that cannot be reached still fails
 * at once: only a failure after a connection was obtained is retried.
 */
final class StartupQuery {

  /** How many times a query whose session was ended is tried in all. */
  static final int ATTEMPTS = 8;

  private static final long FIRST_PAUSE_MS = 20;
  private static final long MAX_PAUSE_MS = 1_000;

  /**
   * SQL states of a session the server ended or a connection that broke under a query: {@code
   * admin_shutdown}, {@code crash_shutdown}, {@code connection_failure}, {@code
   * connection_does_not_exist}.
   */
  private static final Set<String> SESSION_ENDED = Set.of("57P01", "57P02", "08006", "08003");

  /** The query, on a connection of the data source. */
  interface Body<T> {
    T apply(Connection c) throws SQLException;
  }

  private StartupQuery() {}

  /** Runs {@code body} on a connection of {@code dataSource}, again when its session had ended. */
  static <T> T run(DataSource dataSource, Body<T> body) throws SQLException {
    return run(dataSource, Sleeper.SYSTEM, body);
  }

  /** As {@link #run(DataSource, Body)}, pausing between attempts on {@code sleeper}. */
  static <T> T run(DataSource dataSource, Sleeper sleeper, Body<T> body) throws SQLException {
    long pause = FIRST_PAUSE_MS;
    for (int attempt = 1; ; attempt++) {
      Connection c = dataSource.getConnection(); // unreachable: fails here, not retried
      try (c) {
        return body.apply(c);
      } catch (SQLException e) {
        if (attempt >= ATTEMPTS || !sessionEnded(e)) {
          throw e;
        }
      }
      try {
        sleeper.sleep(Duration.ofMillis(pause));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new SQLException("interrupted before asking again on another connection", e);
      }
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }

  /** Whether {@code e} says the session was ended or the connection broke. */
  static boolean sessionEnded(SQLException e) {
    return e.getSQLState() != null && SESSION_ENDED.contains(e.getSQLState());
  }
}
