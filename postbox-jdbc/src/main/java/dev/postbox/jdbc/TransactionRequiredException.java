package dev.postbox.jdbc;

/**
 * The connection given to the outbox is in auto-commit mode. An outbox row must commit atomically
 * with the business change it describes, so the outbox refuses to write outside a transaction;
 * nothing was written.
 */
public class TransactionRequiredException extends OutboxException {
  public TransactionRequiredException() {
    super(
        "the outbox needs a transaction: call connection.setAutoCommit(false) first, or use"
            + " Outbox.inTransaction(dataSource, tx -> ...); nothing was written",
        null);
  }
}
