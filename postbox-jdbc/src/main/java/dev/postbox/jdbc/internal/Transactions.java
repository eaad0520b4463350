package dev.postbox.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.BiFunction;
import javax.sql.DataSource;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * Postbox's own short transactions ({@link #inTransaction}), and the check shared by every
 * transaction Postbox commits on a caller's behalf ({@link #cannotCommit}).
 */
public final class Transactions {

  private static final String ABORTED_TRANSACTION = "25P02";

  private Transactions() {}

  /** SQL work on a connection; may throw. */
  @FunctionalInterface
  public interface SqlWork<T> {
    T apply(Connection c) throws SQLException;
  }

  /**
   * Runs {@code work} in one transaction of its own, on a connection of {@code dataSource} (which
   * hands out connections in auto-commit mode, as pools do): commits, or rolls back on any failure.
   * A runtime exception of the work propagates unchanged; an {@link SQLException} becomes {@code
   * error.apply(what, e)}.
   */
  public static <T> T inTransaction(
      DataSource dataSource,
      String what,
      SqlWork<T> work,
      BiFunction<String, Throwable, RuntimeException> error) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        T result = work.apply(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw error.apply(what, e);
    }
  }

  /**
   * Why the transaction must not be committed, or null if it may. A statement of the work may have
   * failed and left the transaction aborted while the work caught the exception: PostgreSQL then
   * turns {@code COMMIT} into a rollback and pgjdbc reports that commit as a success, so without
   * this check the message would count as processed although neither its record nor its effect was
   * written. And the work may have ended the transaction itself (pgjdbc only).
   */
  static RuntimeException cannotCommit(
      Connection c, String what, BiFunction<String, Throwable, RuntimeException> error) {
    TransactionState state;
    try {
      if (c.isWrapperFor(BaseConnection.class)) {
        state = c.unwrap(BaseConnection.class).getTransactionState();
      } else {
        // not pgjdbc underneath, or a wrapper that hides it: ask the server
        state = TransactionState.OPEN;
        try (Statement s = c.createStatement()) {
          s.execute("SELECT 1");
        } catch (SQLException e) {
          if (!ABORTED_TRANSACTION.equals(e.getSQLState())) {
            throw e;
          }
          state = TransactionState.FAILED;
        }
      }
    } catch (SQLException e) {
      return error.apply("cannot check the transaction before committing " + what, e);
    }
    return switch (state) {
      case OPEN -> null;
      case FAILED ->
          error.apply(
              "the work for "
                  + what
                  + " left its transaction aborted (a statement failed and the work caught the"
                  + " exception); rolled back, nothing recorded",
              null);
      case IDLE ->
          new IllegalStateException(
              "the work for "
                  + what
                  + " ended the inbox transaction itself (commit or rollback), so its effect and"
                  + " the dedupe record may not have committed together; the work must leave"
                  + " commit and rollback to the inbox");
    };
  }
}
