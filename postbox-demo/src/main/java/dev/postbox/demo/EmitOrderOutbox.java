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
 * transaction is run by {@link EmitMessageOutbox#inTransaction}, so the order transactions' {@code
 * tx.write} emits with the commit, in its round trip. No key lock: the shop's order transactions
 * already serialise per customer on the customer's row.
 */
final class EmitOrderOutbox implements Outbox {

  private final EmitMessageOutbox emit = EmitMessageOutbox.create();

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
    return emit.inTransaction(dataSource, work);
  }
}
