package dev.postbox.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/** Checks shared by every transaction Postbox commits on a caller's behalf. */
final class Transactions {

  private static final String ABORTED_TRANSACTION = "25P02";

  private Transactions() {}

  /**
   * Why the transaction must not be committed, or null if it may. A statement of the work may have
   * failed and left the transaction aborted while the work caught the exception: PostgreSQL then
   * turns {@code COMMIT} into a rollback and pgjdbc reports that commit as a success, so without
   * this check the message would count as processed although neither its record nor its effect was
   * written. And the work may have ended the transaction itself (pgjdbc only).
   */
  static RuntimeException cannotCommit(
      Connection c,
      String what,
      java.util.function.BiFunction<String, Throwable, RuntimeException> error) {
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
