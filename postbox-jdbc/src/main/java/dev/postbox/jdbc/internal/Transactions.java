package dev.postbox.jdbc.internal;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.function.BiFunction;
import javax.sql.DataSource;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every transaction Postbox runs: its own short ones ({@link #inTransaction}) and those it runs on
 * a caller's behalf, around the caller's work ({@link #forCaller}).
 */
public final class Transactions {

  private static final Logger log = LoggerFactory.getLogger(Transactions.class);
  private static final String ABORTED_TRANSACTION = "25P02";
  private static final Set<String> ENDS_TRANSACTION =
      Set.of("commit", "rollback", "setAutoCommit", "close");

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

  /** What the work in a caller's transaction decided: its result, and whether to commit. */
  public record Step<T>(T value, boolean commit) {}

  /** The work in a caller's transaction; may throw anything. */
  @FunctionalInterface
  public interface Body<T> {
    Step<T> run(Connection connection) throws Exception;
  }

  /**
   * How a caller's transaction commits: {@link Connection#commit()}, or a statement that ends with
   * {@code COMMIT} so the last writes and the commit share one round trip. Either way, when it
   * returns the transaction has committed; when it throws, it may have (the connection broke) or
   * not (the server refused), and the caller rolls back.
   */
  @FunctionalInterface
  public interface Commit {
    void commit(Connection connection) throws SQLException;
  }

  /**
   * Runs {@code body} in a transaction on {@code c} (the caller closes it) for a caller: switches
   * auto-commit off if it was on, then commits or rolls back as the body decided — refusing to
   * commit a transaction the body left aborted or ended ({@link #cannotCommit}) — and rolls back
   * when anything throws; the body's exceptions propagate unchanged, with a failed rollback added
   * as suppressed. Auto-commit is restored only once the transaction has ended: switching it back
   * on in the middle of one would commit it. A connection whose rollback failed is left as it is
   * (it is almost certainly broken; a pool rolls it back or discards it).
   *
   * @param what the transaction, for messages ("message 42 of consumer 'billing'")
   * @param ifCommitUnknown added to the message when the commit fails (it may have happened)
   * @param beforeCommit run just before the commit (a crash point); a failure rolls back
   * @param afterCommit run just after the commit (a crash point)
   */
  static <T> T forCaller(
      Connection c,
      String what,
      String ifCommitUnknown,
      Body<T> body,
      BiFunction<String, Throwable, RuntimeException> error,
      Runnable beforeCommit,
      Runnable afterCommit)
      throws Exception {
    return forCaller(
        c,
        what,
        ifCommitUnknown,
        body,
        error,
        beforeCommit,
        Connection::commit,
        afterCommit,
        false);
  }

  /**
   * {@link #forCaller(Connection, String, String, Body, BiFunction, Runnable, Runnable)} on a new
   * connection of {@code dataSource}, closed after (a failure to close is logged).
   */
  static <T> T forCallerOnNewConnection(
      DataSource dataSource,
      String what,
      String ifCommitUnknown,
      Body<T> body,
      BiFunction<String, Throwable, RuntimeException> error)
      throws Exception {
    Connection c;
    try {
      c = dataSource.getConnection();
    } catch (SQLException e) {
      throw error.apply("cannot get a connection to process " + what, e);
    }
    try {
      return forCaller(c, what, ifCommitUnknown, body, error, () -> {}, () -> {});
    } finally {
      try {
        c.close();
      } catch (SQLException e) {
        log.warn("closing the connection of {} failed", what, e);
      }
    }
  }

  /**
   * As {@link #forCaller(Connection, String, String, Body, BiFunction, Runnable, Runnable)},
   * committing with {@code commit}.
   *
   * @param guarded the body's work got the connection only through {@link #guarded}, so it cannot
   *     have ended the transaction: one that is idle after the body ran no statement, and {@code
   *     commit} starts it
   */
  public static <T> T forCaller(
      Connection c,
      String what,
      String ifCommitUnknown,
      Body<T> body,
      BiFunction<String, Throwable, RuntimeException> error,
      Runnable beforeCommit,
      Commit commit,
      Runnable afterCommit,
      boolean guarded)
      throws Exception {
    boolean autoCommit = false;
    boolean ended = false;
    try {
      try {
        autoCommit = c.getAutoCommit();
        if (autoCommit) {
          c.setAutoCommit(false);
        }
      } catch (SQLException e) {
        throw error.apply("cannot start a transaction to process " + what, e);
      }
      Step<T> step;
      try {
        step = body.run(c);
        if (step.commit()) {
          RuntimeException refused = cannotCommit(c, what, error, guarded);
          if (refused != null) {
            throw refused;
          }
          beforeCommit.run();
        }
      } catch (Throwable t) {
        ended = rollback(c, t);
        throw t;
      }
      if (!step.commit()) {
        // Nothing was written, so the answer stands even if the rollback fails.
        try {
          c.rollback();
          ended = true;
        } catch (SQLException e) {
          log.warn("rolling back {} without committing failed", what, e);
        }
        return step.value();
      }
      try {
        commit.commit(c);
      } catch (SQLException e) {
        RuntimeException failure =
            error.apply("committing " + what + " failed; " + ifCommitUnknown, e);
        ended = rollback(c, failure);
        throw failure;
      }
      ended = true;
      afterCommit.run();
      return step.value();
    } finally {
      if (ended && autoCommit) {
        try {
          c.setAutoCommit(true);
        } catch (SQLException e) {
          log.debug("cannot restore auto-commit; closing the connection anyway", e);
        }
      }
    }
  }

  /**
   * {@code c} as the work inside a transaction Postbox ends may use it: every call but {@code
   * commit()}, {@code rollback()}, {@code setAutoCommit} and {@code close()} (which throw {@link
   * IllegalStateException}) goes to {@code c}. A dynamic proxy: {@link Connection} has some 60
   * methods to pass on, and {@code unwrap} still reaches the driver's connection.
   */
  public static Connection guarded(Connection c, String owner) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (ENDS_TRANSACTION.contains(method.getName())
                  && (args == null || method.getName().equals("setAutoCommit"))) {
                throw new IllegalStateException(
                    "the work inside "
                        + owner
                        + " called "
                        + method.getName()
                        + "(): the transaction's commit, rollback and connection belong to "
                        + owner);
              }
              switch (method.getName()) {
                case "equals" -> {
                  return args.length == 1 && proxy == args[0];
                }
                case "hashCode" -> {
                  return System.identityHashCode(proxy);
                }
                default -> {}
              }
              try {
                return method.invoke(c, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  /** Rolls back; on failure adds the failure to {@code cause}. Returns whether it rolled back. */
  private static boolean rollback(Connection c, Throwable cause) {
    try {
      c.rollback();
      return true;
    } catch (SQLException e) {
      cause.addSuppressed(e);
      return false;
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
      Connection c,
      String what,
      BiFunction<String, Throwable, RuntimeException> error,
      boolean guarded) {
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
          guarded
              ? null
              : new IllegalStateException(
                  "the work for "
                      + what
                      + " ended its transaction itself (commit or rollback), so its effect and"
                      + " what Postbox writes with it (the inbox's dedupe record, the outbox's"
                      + " messages) may not have committed together; the work must leave commit and"
                      + " rollback to Postbox");
    };
  }
}
