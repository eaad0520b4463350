package dev.postbox.spring;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.util.ClassUtils;

/**
 * The start-up check that the connection pool can serve the effectively-once listeners (each
 * running handler holds one connection for its transaction: up to the subscription's concurrency
 * per listener), the relay, and some headroom for the application's own requests. Only a HikariCP
 * pool states its maximum size; other data sources are not checked.
 */
final class PoolCheck {

  /**
   * What a running relay holds at once: its wake-up listener ({@code LISTEN}, with notifications),
   * the claim of the next batch, the marking of the batch in flight and a lease heartbeat.
   */
  static int relayConnections(PostboxProperties properties) {
    if (!properties.getRelay().isEnabled()) {
      return 0;
    }
    return properties.getRelay().isNotifications() ? 4 : 3;
  }

  private PoolCheck() {}

  /** The problem, if the pool is smaller than what {@code subscriptions} and the relay need. */
  static Optional<String> problem(
      DataSource dataSource, List<Subscription> subscriptions, PostboxProperties properties) {
    List<Subscription> inbox =
        subscriptions.stream()
            .filter(s -> s.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE)
            .toList();
    if (inbox.isEmpty()) {
      return Optional.empty();
    }
    Optional<Integer> max = maximumPoolSize(dataSource);
    if (max.isEmpty()) {
      return Optional.empty();
    }
    int listeners = inbox.stream().mapToInt(Subscription::concurrency).sum();
    int relay = relayConnections(properties);
    int headroom = properties.getConsumers().getPoolHeadroom();
    int needed = listeners + relay + headroom;
    if (max.get() >= needed) {
      return Optional.empty();
    }
    return Optional.of(
        "the connection pool has "
            + max.get()
            + " connections (maximumPoolSize) but needs "
            + needed
            + ": "
            + listeners
            + " for the effectively-once listeners (the concurrency of "
            + String.join(", ", inbox.stream().map(s -> s.name() + " " + s.concurrency()).toList())
            + "; each running handler holds one connection), "
            + relay
            + " for the relay and "
            + headroom
            + " for the application (postbox.consumers.pool-headroom); raise"
            + " spring.datasource.hikari.maximum-pool-size, or lower"
            + " postbox.topics[<topic>].concurrency");
  }

  private static Optional<Integer> maximumPoolSize(DataSource dataSource) {
    if (!ClassUtils.isPresent(
        "com.zaxxer.hikari.HikariDataSource", PoolCheck.class.getClassLoader())) {
      return Optional.empty();
    }
    return Hikari.maximumPoolSize(dataSource);
  }

  /** Loaded only when HikariCP is on the class path. */
  private static final class Hikari {
    static Optional<Integer> maximumPoolSize(DataSource dataSource) {
      try {
        if (dataSource.isWrapperFor(com.zaxxer.hikari.HikariDataSource.class)) {
          return Optional.of(
              dataSource.unwrap(com.zaxxer.hikari.HikariDataSource.class).getMaximumPoolSize());
        }
      } catch (SQLException e) {
        return Optional.empty();
      }
      return Optional.empty();
    }
  }
}
