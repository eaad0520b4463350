package dev.postbox.demo;

import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.TransactionWork;
import dev.postbox.jdbc.cdc.EmitMessageOutbox;
import java.sql.Connection;
import java.util.List;
import javax.sql.DataSource;

/**
 * The orders service's outbox in {@code --outbox emit} mode: the same calls as {@link Outbox}, but
 * each event is a transactional logical message ({@link EmitMessageOutbox}), in the WAL only. The
 * transaction itself is run by the table outbox's {@link Outbox#inTransaction} (write through this
 * object, not through the transaction's own {@code write}, which would write a row). No key lock:
 * the shop's order transactions already serialise per customer on the customer's row.
 */
final class EmitOrderOutbox implements Outbox {

  private final EmitMessageOutbox emit = EmitMessageOutbox.create();
  private final Outbox transactions = Outbox.builder().keyLocking(false).build();

  @Override
  public void write(Connection connection, Message message) {
    emit.write(connection, message);
  }

  @Override
  public void writeAll(Connection connection, List<Message> messages) {
    emit.writeAll(connection, messages);
  }

  @Override
  public <T> T inTransaction(DataSource dataSource, TransactionWork<T> work) {
    return transactions.inTransaction(dataSource, work);
  }
}
