package dev.postbox.spring;

import dev.postbox.jdbc.OperationsProbe;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Postbox's Actuator health: down when a consumer failed for good (Kafka: its poll loop died) or
 * the context runs a relay that is not running. Details: the relay's lanes held; per consumer, the
 * transport's state (Kafka: poll loop alive, partitions, records in flight, and its lag as age, the
 * oldest record its group has not finished, and in records; RabbitMQ: connected, shard queues,
 * deliveries in flight and the messages queued for it); from the tables ({@link OperationsProbe}):
 * the outbox backlog and its oldest row's age, whether it is stuck, unpublishable rows holding
 * their key and the rows held behind them, the dead-letter backlog and parked messages. A backlog
 * is reported, not turned into DOWN: a restart does not clear it.
 */
final class PostboxHealthIndicator extends AbstractHealthIndicator {

  private final Optional<PostboxRelayLifecycle> relay;
  private final PostboxConsumers consumers;
  private final OperationsProbe tables;
  private final TransportWiring transport;

  PostboxHealthIndicator(
      Optional<PostboxRelayLifecycle> relay,
      PostboxConsumers consumers,
      OperationsProbe tables,
      TransportWiring transport) {
    super("Postbox health check failed");
    this.relay = relay;
    this.consumers = consumers;
    this.tables = tables;
    this.transport = transport;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    boolean up = true;
    if (relay.isPresent()) {
      PostboxRelayLifecycle r = relay.get();
      up = r.isRunning();
      builder.withDetail(
          "relay", Map.of("running", r.isRunning(), "lanesHeld", r.ownedLanes().size()));
    }
    Map<String, ConsumerHealth> states = consumers.states();
    Map<String, Map<String, Object>> lags = transport.lag(consumers.subscriptions());
    for (Map.Entry<String, ConsumerHealth> e : states.entrySet()) {
      up &= e.getValue().healthy();
      Map<String, Object> detail = new LinkedHashMap<>(e.getValue().details());
      detail.putAll(lags.getOrDefault(e.getKey(), Map.of()));
      builder.withDetail("consumer " + e.getKey(), detail);
    }
    tableDetails(builder, tables.snapshot());
    if (up) {
      builder.up();
    } else {
      builder.down();
    }
  }

  private static void tableDetails(Health.Builder builder, OperationsProbe.Snapshot s) {
    Map<String, Object> outbox = new LinkedHashMap<>();
    outbox.put("pending", s.outboxPending());
    outbox.put("oldestPendingAge", s.outboxOldestPendingAge().toString());
    outbox.put("stuck", s.outboxStuck());
    outbox.put("unpublishable", s.outboxFailed());
    outbox.put("holdingKeys", s.outboxHolding());
    outbox.put("heldRows", s.outboxHeld());
    builder.withDetail("outbox", outbox);
    builder.withDetail(
        "deadLetters",
        Map.of(
            "pending", s.deadLettersPending(), "oldestAge", s.deadLettersOldestAge().toString()));
    builder.withDetail(
        "parked",
        Map.of(
            "messages",
            s.parkedMessages(),
            "keys",
            s.parkedKeys(),
            "oldestAge",
            s.parkedOldestAge().toString()));
  }
}
