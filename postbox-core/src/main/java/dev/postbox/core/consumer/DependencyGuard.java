package dev.postbox.core.consumer;

import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.spi.DependencyGuardProvider;
import java.time.Clock;
import java.time.Duration;
import java.util.Iterator;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import java.util.function.Predicate;

/**
 * One circuit breaker per named dependency (a payment API, a database, another service), for
 * handlers to wrap their calls in: {@code guard.call("payments", () -> client.charge(order))}.
 *
 * <p>While a dependency keeps failing, its breaker opens and calls fail fast with a {@link
 * DependencyUnavailableException} that says how long until a probe call is let through. A handler
 * built by {@link FailureHandlers} then retries the message after that wait <em>without counting
 * the attempt</em>, so an outage neither burns the messages' retries nor hammers the dependency.
 * After the wait, the next call is a probe: if it succeeds the breaker closes, if it fails the
 * breaker opens again.
 *
 * <p>The breakers come from the optional module {@code postbox-resilience4j} (Resilience4j's
 * count-based circuit breaker), found through {@link DependencyGuardProvider}: add it to use a
 * guard; {@link Builder#build()} without it fails with an {@link IllegalStateException} that says
 * so. Core keeps this API and validates the settings, so that resilience4j is not a dependency of
 * every user. Defaults (the {@code DEFAULT_*} constants here): the breaker opens when at least 50 %
 * of the last 20 calls failed, once at least 10 calls were made; it stays open 30 s; 1 probe call;
 * every exception counts as a failure except {@link PermanentMessageException} (a rejected message
 * is not the dependency's fault); the system UTC clock.
 *
 * <p>Breakers are created on first use of a name and kept for the guard's life: use a fixed set of
 * names. Thread-safe; share one guard per dependency set (typically per application).
 */
public interface DependencyGuard {

  /** Default failure percentage at or above which a breaker opens. */
  float DEFAULT_FAILURE_RATE_THRESHOLD = 50;

  /** Default calls needed before the failure rate is judged. */
  int DEFAULT_MINIMUM_CALLS = 10;

  /** Default number of recent calls the failure rate is computed over. */
  int DEFAULT_SLIDING_WINDOW_CALLS = 20;

  /** Default time a breaker stays open before a probe. */
  Duration DEFAULT_WAIT_IN_OPEN_STATE = Duration.ofSeconds(30);

  /** Default probe calls let through when half open. */
  int DEFAULT_PROBE_CALLS = 1;

  /** State of one dependency's breaker. */
  enum State {
    /** Calls go through; failures are counted. */
    CLOSED,
    /** Calls fail fast with {@link DependencyUnavailableException}. */
    OPEN,
    /** Probe calls go through; their outcome closes or reopens the breaker. */
    HALF_OPEN
  }

  /** A call that returns nothing. */
  @FunctionalInterface
  interface Action {
    /** Runs the call. */
    void run() throws Exception;
  }

  /** A builder with the defaults above. */
  static Builder builder() {
    return new Builder();
  }

  /** A guard with all the defaults. */
  static DependencyGuard defaults() {
    return builder().build();
  }

  /**
   * Calls {@code dependency} through its breaker and returns the result; exceptions of {@code call}
   * pass through unchanged (and are counted).
   *
   * @throws DependencyUnavailableException if the breaker is open (the call is not made)
   */
  <T> T call(String dependency, Callable<T> call) throws Exception;

  /** Like {@link #call}, for a call without a result. */
  default void run(String dependency, Action action) throws Exception {
    call(
        dependency,
        () -> {
          action.run();
          return null;
        });
  }

  /** The state of {@code dependency}'s breaker ({@code CLOSED} if it was never called). */
  State state(String dependency);

  /**
   * The validated settings of a guard, what {@link Builder#build()} hands to the {@link
   * DependencyGuardProvider}. Checked on construction, so a provider never sees a bad value.
   *
   * @param failureRateThreshold failure percentage, in (0, 100], at or above which a breaker opens
   * @param minimumCalls calls needed before the failure rate is judged, at least 1
   * @param slidingWindowCalls recent calls the failure rate is computed over, at least {@code
   *     minimumCalls}
   * @param waitInOpenState how long a breaker stays open before a probe, positive
   * @param probeCalls probe calls let through when half open, at least 1
   * @param countAsFailure which exceptions count against the dependency
   * @param clock the clock of the open-state wait
   */
  record Settings(
      float failureRateThreshold,
      int minimumCalls,
      int slidingWindowCalls,
      Duration waitInOpenState,
      int probeCalls,
      Predicate<Throwable> countAsFailure,
      Clock clock) {

    /**
     * @throws IllegalArgumentException if a setting is out of range, or {@code minimumCalls}
     *     exceeds {@code slidingWindowCalls}
     */
    public Settings {
      Objects.requireNonNull(waitInOpenState, "waitInOpenState");
      Objects.requireNonNull(countAsFailure, "countAsFailure");
      Objects.requireNonNull(clock, "clock");
      if (!(failureRateThreshold > 0 && failureRateThreshold <= 100)) {
        throw new IllegalArgumentException(
            "failureRateThreshold must be in (0, 100], was " + failureRateThreshold);
      }
      if (minimumCalls < 1) {
        throw new IllegalArgumentException("minimumCalls must be >= 1, was " + minimumCalls);
      }
      if (slidingWindowCalls < 1) {
        throw new IllegalArgumentException(
            "slidingWindowCalls must be >= 1, was " + slidingWindowCalls);
      }
      if (minimumCalls > slidingWindowCalls) {
        throw new IllegalArgumentException(
            "minimumCalls ("
                + minimumCalls
                + ") must not exceed slidingWindowCalls ("
                + slidingWindowCalls
                + ")");
      }
      if (waitInOpenState.isNegative() || waitInOpenState.isZero()) {
        throw new IllegalArgumentException(
            "waitInOpenState must be positive, was " + waitInOpenState);
      }
      if (probeCalls < 1) {
        throw new IllegalArgumentException("probeCalls must be >= 1, was " + probeCalls);
      }
    }
  }

  /** Builds a {@link DependencyGuard}; validates at {@link #build()}. Not thread-safe. */
  final class Builder {
    private float failureRateThreshold = DEFAULT_FAILURE_RATE_THRESHOLD;
    private int minimumCalls = DEFAULT_MINIMUM_CALLS;
    private int slidingWindowCalls = DEFAULT_SLIDING_WINDOW_CALLS;
    private Duration waitInOpenState = DEFAULT_WAIT_IN_OPEN_STATE;
    private int probeCalls = DEFAULT_PROBE_CALLS;
    private Predicate<Throwable> countAsFailure = t -> !(t instanceof PermanentMessageException);
    private Clock clock = Clock.systemUTC();

    private Builder() {}

    /** Failure percentage, in (0, 100], at or above which the breaker opens (default 50). */
    public Builder failureRateThreshold(float percent) {
      this.failureRateThreshold = percent;
      return this;
    }

    /** Calls needed before the failure rate is judged, at least 1 (default 10). */
    public Builder minimumCalls(int minimumCalls) {
      this.minimumCalls = minimumCalls;
      return this;
    }

    /** How many recent calls the failure rate is computed over, at least 1 (default 20). */
    public Builder slidingWindowCalls(int calls) {
      this.slidingWindowCalls = calls;
      return this;
    }

    /** How long the breaker stays open before a probe, positive (default 30 s). */
    public Builder waitInOpenState(Duration wait) {
      this.waitInOpenState = Objects.requireNonNull(wait, "waitInOpenState");
      return this;
    }

    /** Probe calls let through when half open, at least 1 (default 1). */
    public Builder probeCalls(int probeCalls) {
      this.probeCalls = probeCalls;
      return this;
    }

    /**
     * Which exceptions count against the dependency (default: all but {@link
     * PermanentMessageException}); the others pass through as successes.
     */
    public Builder countAsFailure(Predicate<Throwable> countAsFailure) {
      this.countAsFailure = Objects.requireNonNull(countAsFailure, "countAsFailure");
      return this;
    }

    /** The clock for the open-state wait (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Builds the guard.
     *
     * @throws IllegalArgumentException if a setting is out of range, or {@code minimumCalls}
     *     exceeds {@code slidingWindowCalls}
     * @throws IllegalStateException if no {@link DependencyGuardProvider} is on the class path (add
     *     {@code dev.postbox:postbox-resilience4j})
     */
    public DependencyGuard build() {
      Settings settings =
          new Settings(
              failureRateThreshold,
              minimumCalls,
              slidingWindowCalls,
              waitInOpenState,
              probeCalls,
              countAsFailure,
              clock);
      return provider().create(settings);
    }

    private static DependencyGuardProvider provider() {
      for (ClassLoader loader :
          new ClassLoader[] {
            DependencyGuard.class.getClassLoader(), Thread.currentThread().getContextClassLoader()
          }) {
        Iterator<DependencyGuardProvider> found =
            ServiceLoader.load(DependencyGuardProvider.class, loader).iterator();
        if (found.hasNext()) {
          return found.next();
        }
      }
      throw new IllegalStateException(
          "no DependencyGuard implementation on the class path: add the module"
              + " dev.postbox:postbox-resilience4j (it provides the circuit breakers)");
    }
  }
}
