package dev.postbox.rabbitmq.internal;

import dev.postbox.core.spi.DeadLetterStore;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The dead letters of a subscriber that also has a broker dead-letter exchange: each given-up
 * delivery is first published to that exchange, body and properties as received plus headers that
 * say why ({@link DeadLetterCopy}: error, error class, attempts, subscription, first failure,
 * origin queue), and the broker's publisher confirm awaited; then it is kept in the dead-letter
 * store (if any); only after both does the subscriber ack the original delivery.
 *
 * <p>Not a {@code basic.nack} into a queue's dead-letter exchange: that would carry only the
 * broker's {@code x-death}, not why the consumer gave up. The order (copy confirmed, then stored,
 * then the original acked) never loses a message: a failure of either step fails {@link #add},
 * which the engine retries, and a crash between the confirm and the ack redelivers the original,
 * which is given up again: the exchange may then get a duplicate copy, never none. Everything else
 * goes to the store. Thread-safe.
 */
public final class BrokerDeadLetters implements DeadLetterStore {

  private final Optional<DeadLetterStore> store;
  private final WaitQueues broker;

  /** Dead letters to {@code broker}'s dead-letter exchange, then to {@code store}. */
  public BrokerDeadLetters(Optional<DeadLetterStore> store, WaitQueues broker) {
    this.store = store;
    this.broker = broker;
  }

  @Override
  public long add(NewDeadLetter letter) {
    broker.toDeadLetterExchange(letter);
    return store.map(s -> s.add(letter)).orElse(0L);
  }

  @Override
  public Optional<DeadLetter> find(long id) {
    return store.flatMap(s -> s.find(id));
  }

  @Override
  public List<DeadLetter> query(Query query) {
    return store.map(s -> s.query(query)).orElse(List.of());
  }

  @Override
  public void markReplayed(long id, String by) {
    store.ifPresent(s -> s.markReplayed(id, by));
  }

  @Override
  public void discard(long id, String by, String reason) {
    store.ifPresent(s -> s.discard(id, by, reason));
  }

  @Override
  public int purge(Duration age, int limit) {
    return store.map(s -> s.purge(age, limit)).orElse(0);
  }
}
