package dev.postbox.jdbc;

import dev.postbox.core.Message;
import dev.postbox.jdbc.internal.PostgresOutbox;
import java.sql.Connection;
import java.util.List;
import javax.sql.DataSource;

/**
 * Writes messages into the transactional outbox, in the caller's own database transaction: the
 * message commits if and only if the business change commits; a relay publishes it afterwards.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.postgres();
 * outbox.inTransaction(dataSource, tx -> {
 *   placeOrder(tx.connection(), order);
 *   tx.write(Message.builder("orders", "order.created").key(order.id()).jsonPayload(json).build());
 *   return null;
 * });
 * }</pre>
 *
 * <p><b>Per-key order.</b> By default a write takes a transaction-scoped advisory lock on the
 * message key before its row gets a position, so two transactions writing the same key commit in
 * position order, which is the order the relay publishes. The second writer of a key waits until
 * the first commits. Write the outbox row after the business rows your transaction locks (the usual
 * order), or two transactions that lock the same rows in opposite orders can deadlock (PostgreSQL
 * detects it and aborts one). Turn the lock off with {@link Builder#keyLocking(boolean)} only if
 * your transactions are already serialised per key some other way.
 *
 * <p>Thread-safe.
 */
public interface Outbox {

  /** Default: writes lock their key so per-key commit order equals position order. */
  boolean DEFAULT_KEY_LOCKING = true;

  /** An outbox on PostgreSQL with the defaults (key locking on). */
  static Outbox postgres() {
    return builder().build();
  }

  /** A builder for a PostgreSQL outbox. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * Writes {@code message} using {@code connection}'s current transaction.
   *
   * @throws TransactionRequiredException if the connection is in auto-commit mode (nothing is
   *     written)
   * @throws OutboxException if the database refuses the write (for example, the message id was
   *     written before)
   */
  void write(Connection connection, Message message);

  /**
   * Writes {@code messages} in list order using {@code connection}'s current transaction (one round
   * trip).
   */
  void writeAll(Connection connection, List<Message> messages);

  /**
   * Runs {@code work} in a new transaction on a connection from {@code dataSource}: commits if it
   * returns, rolls back if it throws (and rethrows), and always closes the connection.
   */
  <T> T inTransaction(DataSource dataSource, TransactionWork<T> work);

  /** Builds an {@link Outbox}. Not thread-safe. */
  final class Builder {
    private boolean keyLocking = DEFAULT_KEY_LOCKING;

    private Builder() {}

    /**
     * Whether writes lock their key so per-key commit order equals position order (default true).
     */
    public Builder keyLocking(boolean keyLocking) {
      this.keyLocking = keyLocking;
      return this;
    }

    /** Builds the outbox. */
    public Outbox build() {
      return new PostgresOutbox(keyLocking);
    }
  }
}
