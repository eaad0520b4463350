package dev.postbox.resilience4j;

import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.consumer.DependencyUnavailableException;
import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/** The {@link DependencyGuard} on Resilience4j circuit breakers. Thread-safe. */
final class CircuitBreakerDependencyGuard implements DependencyGuard {

  /** A breaker and when it last opened for (read by refused calls to compute their wait). */
  private record Guarded(CircuitBreaker breaker, AtomicReference<Instant> openUntil) {}

  private final CircuitBreakerConfig config;
  private final Duration waitInOpenState;
  private final Clock clock;
  private final Map<String, Guarded> breakers = new ConcurrentHashMap<>();

  CircuitBreakerDependencyGuard(DependencyGuard.Settings settings) {
    this.waitInOpenState = settings.waitInOpenState();
    this.clock = settings.clock();
    this.config =
        CircuitBreakerConfig.custom()
            .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
            .slidingWindowSize(settings.slidingWindowCalls())
            .minimumNumberOfCalls(settings.minimumCalls())
            .failureRateThreshold(settings.failureRateThreshold())
            .waitDurationInOpenState(settings.waitInOpenState())
            .permittedNumberOfCallsInHalfOpenState(settings.probeCalls())
            .automaticTransitionFromOpenToHalfOpenEnabled(false)
            .recordException(settings.countAsFailure())
            .clock(settings.clock())
            .build();
  }

  @Override
  public <T> T call(String dependency, Callable<T> call) throws Exception {
    Objects.requireNonNull(call, "call");
    Guarded g = guarded(dependency);
    try {
      return CircuitBreaker.decorateCallable(g.breaker(), call).call();
    } catch (CallNotPermittedException e) {
      throw new DependencyUnavailableException(dependency, retryAfter(g));
    }
  }

  @Override
  public State state(String dependency) {
    Guarded g = breakers.get(Objects.requireNonNull(dependency, "dependency"));
    if (g == null) {
      return State.CLOSED;
    }
    return switch (g.breaker().getState()) {
      case OPEN, FORCED_OPEN -> State.OPEN;
      case HALF_OPEN -> State.HALF_OPEN;
      default -> State.CLOSED;
    };
  }

  private Guarded guarded(String dependency) {
    Objects.requireNonNull(dependency, "dependency");
    return breakers.computeIfAbsent(
        dependency,
        name -> {
          CircuitBreaker breaker = CircuitBreaker.of(name, config);
          AtomicReference<Instant> openUntil = new AtomicReference<>(Instant.EPOCH);
          breaker
              .getEventPublisher()
              .onStateTransition(e -> {
                if (e.getStateTransition().getToState() == CircuitBreaker.State.OPEN) {
                  openUntil.set(clock.instant().plus(waitInOpenState));
                }
              });
          return new Guarded(breaker, openUntil);
        });
  }

  /**
   * The wait until a probe is let through, plus 1 ms (Resilience4j lets it through only strictly
   * after the open-state wait); while half open with the probes taken, a tenth of the open-state
   * wait (at least 10 ms), to look again soon.
   */
  private Duration retryAfter(Guarded g) {
    Duration left = Duration.between(clock.instant(), g.openUntil().get());
    if (left.isNegative() || left.isZero()) {
      Duration recheck = waitInOpenState.dividedBy(10);
      return recheck.compareTo(Duration.ofMillis(10)) < 0 ? Duration.ofMillis(10) : recheck;
    }
    return left.plusMillis(1);
  }
}
