package dev.postbox.console;

import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.jdbc.PostgresConsumerAgeStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ages the subscribers report ({@code postbox_consumer_age}), read-only, for the RabbitMQ lag
 * probe: the console starts without its database, so the store is made at the first read that finds
 * the table, and a read that fails (the database down: its own banner says so; the table missing:
 * logged once per distinct cause) leaves the ages unknown instead of failing the queues' reading.
 */
final class ConsoleAgeStore implements ConsumerAgeStore {

  private static final Logger log = LoggerFactory.getLogger(ConsoleAgeStore.class);

  private final DataSource dataSource;
  private final AtomicReference<ConsumerAgeStore> store = new AtomicReference<>();
  private final AtomicReference<String> lastFailure = new AtomicReference<>("");

  ConsoleAgeStore(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  public Map<String, Optional<Instant>> read(
      String subscription, Instant now, Duration staleAfter) {
    try {
      ConsumerAgeStore s = store.get();
      if (s == null) {
        s = PostgresConsumerAgeStore.create(dataSource);
        store.set(s);
      }
      Map<String, Optional<Instant>> ages = s.read(subscription, now, staleAfter);
      lastFailure.set("");
      return ages;
    } catch (RuntimeException e) {
      String why = String.valueOf(e.getMessage());
      if (!why.equals(lastFailure.getAndSet(why))) {
        log.warn(
            "postbox console: the RabbitMQ queues' oldest ages are unknown (postbox_consumer_age,"
                + " migration V21): {}",
            why);
      }
      return Map.of();
    }
  }

  @Override
  public void report(
      String subscription, String instance, Map<String, Optional<Instant>> oldest, Instant now) {
    throw new UnsupportedOperationException("the console only reads the ages");
  }

  @Override
  public void forget(String subscription, String instance) {
    throw new UnsupportedOperationException("the console only reads the ages");
  }
}
