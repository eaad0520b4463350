package dev.postbox.jdbc;

import dev.postbox.core.Message;
import java.sql.Connection;
import java.util.List;

/**
 * The transaction of an {@link Outbox#inTransaction} callback (or of {@link
 * dev.postbox.jdbc.cdc.EmitMessageOutbox#inTransaction}, whose writes are emitted with the commit):
 * its connection, for the business change, and the outbox writes that commit with it. Valid only
 * inside the callback, on the callback's thread.
 */
public interface OutboxTransaction {

  /** The transaction's connection (auto-commit off). Do not commit, roll back or close it. */
  Connection connection();

  /** Writes a message in this transaction. */
  void write(Message message);

  /** Writes messages in this transaction, in list order. */
  void writeAll(List<Message> messages);
}
