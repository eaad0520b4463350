package dev.postbox.spring;

import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.TransactionRequiredException;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Writes messages into the outbox on the connection of the current Spring-managed transaction
 * ({@code @Transactional}, {@code TransactionTemplate}; JDBC or JPA on the same {@code
 * DataSource}), so they commit if and only if the transaction does. Outside a transaction it
 * refuses with {@link TransactionRequiredException} and writes nothing. A topic the delivery table
 * sends without the outbox (at-most-once) is refused too.
 *
 * <pre>{@code
 * @Transactional
 * public void placeOrder(Order order) {
 *   orders.save(order);
 *   outbox.write(Message.builder("orders", "order.created").key(order.id()).jsonPayload(json).build());
 * }
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class TransactionalOutbox {

  private final DataSource dataSource;
  private final Outbox outbox;
  private final PostboxProperties properties;

  /** An outbox writing through {@code outbox} on {@code dataSource}'s current transaction. */
  public TransactionalOutbox(DataSource dataSource, Outbox outbox, PostboxProperties properties) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.properties = Objects.requireNonNull(properties, "properties");
  }

  /**
   * Writes {@code message} in the current transaction.
   *
   * @throws TransactionRequiredException if no Spring-managed transaction is active on the data
   *     source (nothing is written)
   * @throws IllegalArgumentException if the delivery table sends the topic without the outbox
   */
  public void write(Message message) {
    writeAll(List.of(message));
  }

  /** Writes {@code messages} in list order in the current transaction (one round trip). */
  public void writeAll(List<Message> messages) {
    messages.forEach(this::requireOutboxTopic);
    Connection connection = currentConnection();
    try {
      outbox.writeAll(connection, messages);
    } finally {
      DataSourceUtils.releaseConnection(connection, dataSource);
    }
  }

  private void requireOutboxTopic(Message message) {
    if (!properties.topic(message.topic()).usesOutbox()) {
      throw new IllegalArgumentException(
          "topic '"
              + message.topic()
              + "' is sent without the outbox (postbox.topics["
              + message.topic()
              + "]: at-most-once or outbox: false); nothing was written");
    }
  }

  private Connection currentConnection() {
    if (!TransactionSynchronizationManager.isActualTransactionActive()
        || TransactionSynchronizationManager.getResource(dataSource) == null) {
      throw new TransactionRequiredException(
          "the outbox writes in the current Spring-managed transaction, and there is none on this"
              + " thread for the application's DataSource: call it from a @Transactional method or"
              + " inside TransactionTemplate.execute(...); nothing was written");
    }
    return DataSourceUtils.getConnection(dataSource);
  }
}
