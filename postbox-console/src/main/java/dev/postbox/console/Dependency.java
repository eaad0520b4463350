package dev.postbox.console;

import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.core.functions.CheckedSupplier;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thing the console reads from (the database, Kafka) behind a Resilience4j circuit: the first
 * failed call opens it, and while it is open calls fail at once (no page waits on a dependency
 * known to be down); after {@code retryAfter} the next call tries again and closes it when it
 * succeeds. Nothing runs in the background: only requests try. Each change of state is logged once
 * ("kafka unreachable since ...: cause", "kafka reachable again after 42s"), never each failed
 * call.
 */
final class Dependency {

  private static final Logger log = LoggerFactory.getLogger(Dependency.class);

  private final String name;
  private final CircuitBreaker circuit;
  private final Clock clock;
  private final AtomicReference<Instant> downSince = new AtomicReference<>();
  private final AtomicReference<String> lastError = new AtomicReference<>("");

  Dependency(String name, Duration retryAfter, Clock clock) {
    this.name = name;
    this.clock = clock;
    this.circuit =
        CircuitBreaker.of(
            name,
            CircuitBreakerConfig.custom()
                .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
                .slidingWindowSize(1)
                .minimumNumberOfCalls(1)
                .failureRateThreshold(100)
                .permittedNumberOfCallsInHalfOpenState(1)
                .waitDurationInOpenState(retryAfter)
                .automaticTransitionFromOpenToHalfOpenEnabled(false)
                .clock(clock)
                .build());
    circuit.getEventPublisher().onError(e -> lastError.set(describe(e.getThrowable())));
    circuit
        .getEventPublisher()
        .onStateTransition(e -> {
          switch (e.getStateTransition().getToState()) {
            case OPEN -> wentDown();
            case CLOSED -> cameBack();
            default -> {}
          }
        });
  }

  /** The dependency's name as shown ("database", "kafka"). */
  String name() {
    return name;
  }

  /** Since when it is unreachable; empty while it answers. */
  Optional<Instant> downSince() {
    return Optional.ofNullable(downSince.get());
  }

  /** Whether it is known to be unreachable (for the templates). */
  boolean isDown() {
    return downSince.get() != null;
  }

  /** The last failure, as one line. */
  String lastError() {
    return lastError.get();
  }

  /**
   * Calls {@code call} through the circuit.
   *
   * @throws CallNotPermittedException at once while the circuit is open
   */
  <T> T call(CheckedSupplier<T> call) throws Throwable {
    return circuit.executeCheckedSupplier(call);
  }

  /**
   * Records a failure seen outside {@link #call} (a query on a connection taken while the
   * dependency still answered, failing because it went away): the circuit opens as if a call had
   * failed, so the next pages answer at once with the banner.
   */
  void failed(Throwable cause) {
    circuit.onError(0, java.util.concurrent.TimeUnit.NANOSECONDS, cause);
  }

  private void wentDown() {
    Instant now = clock.instant();
    if (downSince.compareAndSet(null, now)) {
      log.warn("postbox console: {} unreachable since {}: {}", name, now, lastError.get());
    }
  }

  private void cameBack() {
    Instant since = downSince.getAndSet(null);
    if (since != null) {
      log.info(
          "postbox console: {} reachable again after {}s",
          name,
          Duration.between(since, clock.instant()).toSeconds());
    }
  }

  private static String describe(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String m = String.valueOf(root.getMessage());
    return root.getClass().getSimpleName() + ": " + (m.length() > 200 ? m.substring(0, 200) : m);
  }
}
