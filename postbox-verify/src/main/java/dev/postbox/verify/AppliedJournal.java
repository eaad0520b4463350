package dev.postbox.verify;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The consumers' side of the {@link CommitJournal}: a pool whose connections journal the messages a
 * handler applied once the transaction that applied them committed, so that an effect PostgreSQL
 * acknowledged and then lost (an asynchronous standby promoted before it had it) is told apart from
 * a message Postbox never applied. The handler names each applied message on its transaction's
 * connection ({@link #applied}); {@code commit()} appends them after it returned, {@code
 * rollback()} and {@code close()} forget them. A dynamic proxy around the pool's connections (the
 * harness's own, not a product feature: Postbox has no after-commit hook for handlers, and the
 * campaign must see commits, not attempts).
 */
final class AppliedJournal {

  /** The applied journals' file name suffix in the journals' folder. */
  static final String SUFFIX = ".applied";

  private AppliedJournal() {}

  /** {@code ds} with journaling connections, appending to {@code journal}. */
  static DataSource journaling(DataSource ds, CommitJournal journal) {
    return (DataSource)
        Proxy.newProxyInstance(
            AppliedJournal.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, m, args) -> {
              Object r = call(ds, m, args);
              if (m.getName().equals("getConnection")) {
                return Proxy.newProxyInstance(
                    AppliedJournal.class.getClassLoader(),
                    new Class<?>[] {Connection.class},
                    new Journaling((Connection) r, journal));
              }
              return r;
            });
  }

  /**
   * Names message {@code id} of {@code phase} as applied in {@code c}'s open transaction; nothing
   * if {@code c} is not a journaling connection.
   */
  static void applied(Connection c, int phase, UUID id) {
    if (Proxy.isProxyClass(c.getClass()) && Proxy.getInvocationHandler(c) instanceof Journaling j) {
      j.pending(phase, id);
    }
  }

  private static Object call(Object target, Method m, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** One connection: the messages applied in its open transaction. */
  private static final class Journaling implements InvocationHandler {
    private final Connection target;
    private final CommitJournal journal;
    private final List<Integer> phases = new ArrayList<>();
    private final List<UUID> ids = new ArrayList<>();

    Journaling(Connection target, CommitJournal journal) {
      this.target = target;
      this.journal = journal;
    }

    synchronized void pending(int phase, UUID id) {
      phases.add(phase);
      ids.add(id);
    }

    @Override
    public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
      switch (m.getName()) {
        case "commit" -> {
          // PostgreSQL turns COMMIT of an aborted transaction into a rollback that pgjdbc reports
          // as a success: such a transaction's messages are not journaled
          boolean aborted = aborted();
          call(target, m, args); // throws if the commit failed: nothing journaled
          if (aborted) {
            forget();
          } else {
            flush();
          }
          return null;
        }
        case "rollback", "close" -> forget();
        case "unwrap" -> {
          if (args[0] == Connection.class) {
            return proxy;
          }
        }
        case "isWrapperFor" -> {
          if (args[0] == Connection.class) {
            return true;
          }
        }
        default -> {}
      }
      return call(target, m, args);
    }

    private boolean aborted() throws java.sql.SQLException {
      return target.isWrapperFor(org.postgresql.core.BaseConnection.class)
          && target.unwrap(org.postgresql.core.BaseConnection.class).getTransactionState()
              == org.postgresql.core.TransactionState.FAILED;
    }

    private synchronized void flush() {
      for (int i = 0; i < ids.size(); i++) {
        journal.acknowledged(phases.get(i), List.of(ids.get(i)));
      }
      forget();
    }

    private synchronized void forget() {
      phases.clear();
      ids.clear();
    }
  }
}
