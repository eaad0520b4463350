package dev.postbox.jdbc;

import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.jdbc.internal.PostgresConsumerAges;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The {@link ConsumerAgeStore} on PostgreSQL: each instance's oldest unfinished message per queue
 * in {@code postbox_consumer_age} (migration V21). Give it to a subscriber (RabbitMQ: {@code
 * RabbitSubscriber.builder(...).ageStore(...)}) so that it reports, and to a probe in another
 * process ({@code RabbitLagProbe.builder(...).ages(...)}) so that it reads a queue's lag as age.
 * Failures throw {@link OutboxException}.
 *
 * <p>No options (so no defaults). Thread-safe.
 */
public final class PostgresConsumerAgeStore {

  private PostgresConsumerAgeStore() {}

  /**
   * A consumer age store on {@code dataSource}; checks that its table exists in the data source's
   * current schema.
   *
   * @throws OutboxException if it does not (run {@link PostboxMigrations#migrate} first) or the
   *     database cannot be reached
   */
  public static ConsumerAgeStore create(DataSource dataSource) {
    return new PostgresConsumerAges(Objects.requireNonNull(dataSource, "dataSource"));
  }
}
