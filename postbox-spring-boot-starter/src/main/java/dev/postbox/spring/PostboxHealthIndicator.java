package dev.postbox.spring;

import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.kafka.ConsumerLagProbe;
import dev.postbox.kafka.SubscriberState;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Postbox's Actuator health: down when a consumer's poll loop has died or the context runs a relay
 * that is not running. Details: the relay's lanes held; per consumer, whether its poll loop is
 * alive, its partitions, records in flight and its lag as age (the oldest record its group has not
 * finished, {@link ConsumerLagProbe}) and in records; from the tables ({@link OperationsProbe}):
 * the outbox backlog and its oldest row's age, whether it is stuck, unpublishable rows holding
 * their key and the rows held behind them, the dead-letter backlog and parked messages. A backlog
 * is reported, not turned into DOWN: a restart does not clear it.
 */
final class PostboxHealthIndicator extends AbstractHealthIndicator implements AutoCloseable {

  private final Optional<PostboxRelayLifecycle> relay;
  private final PostboxConsumers consumers;
  private final OperationsProbe tables;
  private final Function<List<String>, Optional<ConsumerLagProbe>> lagProbes;
  private Optional<ConsumerLagProbe> lag = Optional.empty(); // guarded by this
  private List<String> lagGroups = List.of(); // guarded by this

  /**
   * @param lagProbes builds the lag probe for the running consumers' groups (none without a broker
   *     address)
   */
  PostboxHealthIndicator(
      Optional<PostboxRelayLifecycle> relay,
      PostboxConsumers consumers,
      OperationsProbe tables,
      Function<List<String>, Optional<ConsumerLagProbe>> lagProbes) {
    super("Postbox health check failed");
    this.relay = relay;
    this.consumers = consumers;
    this.tables = tables;
    this.lagProbes = lagProbes;
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
    Map<String, SubscriberState> states = consumers.states();
    Map<String, Lag> lags = lags(List.copyOf(states.keySet()));
    for (Map.Entry<String, SubscriberState> e : states.entrySet()) {
      SubscriberState s = e.getValue();
      up &= s.healthy();
      Map<String, Object> detail = new LinkedHashMap<>();
      detail.put("pollLoopAlive", s.alive());
      detail.put("partitions", s.assignment().size());
      detail.put("inFlight", s.inFlight());
      detail.put("fenced", s.fenced());
      detail.put("failure", s.failure().map(Throwable::toString).orElse("none"));
      Lag lag = lags.getOrDefault(e.getKey(), Lag.NONE);
      detail.put("lagAge", lag.age().toString());
      detail.put("offsetLag", lag.records());
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

  /** Worst age and total records behind per group; empty when no probe can be made. */
  private synchronized Map<String, Lag> lags(List<String> groups) {
    if (groups.isEmpty()) {
      return Map.of();
    }
    if (!groups.equals(lagGroups)) {
      lag.ifPresent(ConsumerLagProbe::close);
      lag = lagProbes.apply(groups);
      lagGroups = groups;
    }
    Map<String, Lag> out = new LinkedHashMap<>();
    lag.ifPresent(p ->
        p.read()
            .forEach(l ->
                out.merge(
                    l.group(), new Lag(l.oldestUnprocessedAge(), l.offsetLag()), Lag::worst)));
    return out;
  }

  @Override
  public synchronized void close() {
    lag.ifPresent(ConsumerLagProbe::close);
    lag = Optional.empty();
  }

  private record Lag(Duration age, long records) {
    static final Lag NONE = new Lag(Duration.ZERO, 0);

    Lag worst(Lag other) {
      return new Lag(age.compareTo(other.age) >= 0 ? age : other.age, records + other.records);
    }
  }
}
