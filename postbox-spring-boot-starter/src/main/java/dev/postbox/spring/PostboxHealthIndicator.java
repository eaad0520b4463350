package dev.postbox.spring;

import dev.postbox.kafka.SubscriberState;
import java.util.Map;
import java.util.Optional;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Postbox's Actuator health: down when a consumer's poll loop has died or the context runs a relay
 * that is not running; details: the relay's lanes held and, per consumer, whether its poll loop is
 * alive, its partitions and records in flight.
 */
final class PostboxHealthIndicator extends AbstractHealthIndicator {

  private final Optional<PostboxRelayLifecycle> relay;
  private final PostboxConsumers consumers;

  PostboxHealthIndicator(Optional<PostboxRelayLifecycle> relay, PostboxConsumers consumers) {
    this.relay = relay;
    this.consumers = consumers;
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
    for (Map.Entry<String, SubscriberState> e : consumers.states().entrySet()) {
      SubscriberState s = e.getValue();
      up &= s.healthy();
      builder.withDetail(
          "consumer " + e.getKey(),
          Map.of(
              "pollLoopAlive",
              s.alive(),
              "partitions",
              s.assignment().size(),
              "inFlight",
              s.inFlight(),
              "fenced",
              s.fenced(),
              "failure",
              s.failure().map(Throwable::toString).orElse("none")));
    }
    if (up) {
      builder.up();
    } else {
      builder.down();
    }
  }
}
