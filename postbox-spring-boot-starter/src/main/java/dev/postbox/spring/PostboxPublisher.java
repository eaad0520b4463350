package dev.postbox.spring;

import dev.postbox.core.Message;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Publishes a message the way the delivery table says for its topic: through the {@link
 * TransactionalOutbox} (in the current Spring-managed transaction, which is then required) for
 * topics that use the outbox, or straight to the broker at most once (a {@link DirectSender}: on
 * Kafka {@code KafkaAtMostOncePublisher}, on RabbitMQ an unconfirmed publish to the topic's
 * exchange; no outbox, no retries, never twice) for {@code at-most-once} topics. A direct send made
 * inside a transaction waits for its commit (a rollback sends nothing); outside one it is sent at
 * once.
 *
 * <pre>{@code
 * @Transactional
 * public void place(Order order) {
 *   orders.save(order);
 *   publisher.publish(orderCreated);   // postbox.topics[order.created]: effectively-once -> outbox
 *   publisher.publish(pageView);       // postbox.topics[metrics]: at-most-once -> sent after commit
 * }
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class PostboxPublisher implements AutoCloseable {

  private final TransactionalOutbox outbox;
  private final PostboxProperties properties;
  private final Supplier<? extends DirectSender> directFactory;
  private DirectSender direct; // guarded by this
  private boolean closed; // guarded by this

  /**
   * A publisher writing outbox topics through {@code outbox} and sending the others with a
   * publisher made by {@code directFactory} at the first direct send.
   */
  public PostboxPublisher(
      TransactionalOutbox outbox,
      PostboxProperties properties,
      Supplier<? extends DirectSender> directFactory) {
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.properties = Objects.requireNonNull(properties, "properties");
    this.directFactory = Objects.requireNonNull(directFactory, "directFactory");
  }

  /**
   * Publishes {@code message} as its topic's row of the delivery table says.
   *
   * @throws dev.postbox.jdbc.TransactionRequiredException if the topic uses the outbox and no
   *     Spring-managed transaction is active (nothing is written or sent)
   */
  public void publish(Message message) {
    publishAll(List.of(message));
  }

  /**
   * Publishes {@code messages}: the outbox topics' ones in one write, in list order, then the
   * direct ones (after the commit, inside a transaction).
   */
  public void publishAll(List<Message> messages) {
    List<Message> viaOutbox = new ArrayList<>();
    List<Message> directly = new ArrayList<>();
    for (Message m : messages) {
      (properties.topic(m.topic()).usesOutbox() ? viaOutbox : directly).add(m);
    }
    if (!viaOutbox.isEmpty()) {
      outbox.writeAll(viaOutbox);
    }
    if (directly.isEmpty()) {
      return;
    }
    if (TransactionSynchronizationManager.isSynchronizationActive()) {
      TransactionSynchronizationManager.registerSynchronization(
          new TransactionSynchronization() {
            @Override
            public void afterCommit() {
              send(directly);
            }
          });
    } else {
      send(directly);
    }
  }

  /** Messages of at-most-once topics dropped by the direct sender (buffer full, broker unknown). */
  public synchronized long droppedDirect() {
    return direct == null ? 0 : direct.dropped();
  }

  private void send(List<Message> messages) {
    DirectSender sender = sender();
    messages.forEach(sender::send);
  }

  private synchronized DirectSender sender() {
    if (closed) {
      throw new IllegalStateException("the Postbox publisher is closed");
    }
    if (direct == null) {
      direct = directFactory.get();
    }
    return direct;
  }

  /** Sends messages of at-most-once topics to the broker: fire and forget, never twice. */
  public interface DirectSender extends AutoCloseable {
    /** Sends {@code message} once, or drops it (counted) when it cannot. */
    void send(Message message);

    /** Messages dropped so far. */
    long dropped();

    @Override
    void close();
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (direct != null) {
      direct.close();
    }
  }
}
