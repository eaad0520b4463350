package dev.postbox.spring;

import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresRelayStore;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the outbox relay (PostgreSQL store, the transport's publisher: Kafka or RabbitMQ) with the
 * Spring context: built from {@code postbox.relay.*} and started when the context starts; stopped
 * gracefully (the batch in flight is marked, up to {@code postbox.relay.shutdown-timeout}, and the
 * lanes are released) when it stops.
 */
public final class PostboxRelayLifecycle implements SmartLifecycle {

  private final PostboxProperties properties;
  private final TransportWiring transport;
  private final DataSource dataSource;
  private final PostboxMetrics metrics;
  private final PostboxObservations observations;
  private Optional<Relay> relay = Optional.empty();

  PostboxRelayLifecycle(
      PostboxProperties properties,
      TransportWiring transport,
      DataSource dataSource,
      PostboxMetrics metrics,
      PostboxObservations observations) {
    this.properties = properties;
    this.transport = transport;
    this.dataSource = dataSource;
    this.metrics = metrics;
    this.observations = observations;
  }

  @Override
  public synchronized void start() {
    if (relay.isPresent()) {
      return;
    }
    PostboxProperties.RelaySettings r = properties.getRelay();
    Relay.Builder b =
        Relay.builder(
                PostgresRelayStore.builder(dataSource).notifications(r.isNotifications()).build(),
                observations.relayPublisher(transport.relayPublisher()))
            .batchSize(r.getBatchSize())
            .leaseTtl(r.getLeaseTtl())
            .pollInterval(r.getPollInterval())
            .idleGrace(r.getIdleGrace())
            .retention(r.getRetention())
            .purgeInterval(r.getPurgeInterval())
            .shutdownTimeout(r.getShutdownTimeout())
            .stuckThreshold(r.getStuckThreshold())
            .unpublishableRows(r.getUnpublishableRows())
            .metrics(metrics);
    if (!r.getInstanceId().isBlank()) {
      b.instanceId(r.getInstanceId());
    }
    Relay built = b.build();
    built.start();
    relay = Optional.of(built);
  }

  /**
   * Starts before and stops after the web server ({@code DEFAULT_PHASE - 2048}) and the consumers,
   * so that what requests and handlers write to the outbox while the application shuts down is
   * still published.
   */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE - 4096;
  }

  @Override
  public synchronized void stop() {
    relay.ifPresent(Relay::close);
    relay = Optional.empty();
  }

  @Override
  public synchronized boolean isRunning() {
    return relay.isPresent();
  }

  /** The lanes this relay owns now (empty when it is not running). */
  public synchronized Set<Integer> ownedLanes() {
    return relay.map(Relay::ownedLanes).orElse(Set.of());
  }

  /** The relay's counters, while it runs. */
  public synchronized Optional<Relay.Stats> stats() {
    return relay.map(Relay::stats);
  }
}
