package dev.postbox.jdbc;

/**
 * The connection given to the outbox or the inbox is in auto-commit mode. An outbox row must commit
 * atomically with the business change it describes, and an entity version with the effect it
 * guards, so Postbox refuses to write them outside a transaction; nothing was written.
 */
public class TransactionRequiredException extends OutboxException {
  public TransactionRequiredException() {
    this(
        "the outbox needs a transaction: call connection.setAutoCommit(false) first, or use"
            + " Outbox.inTransaction(dataSource, tx -> ...); nothing was written");
  }

  /** With a message that says what needed the transaction. */
  public TransactionRequiredException(String message) {
    super(message, null);
  }
}
